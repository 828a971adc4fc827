#pragma once
// The parameter table and the parameter/gradient arenas.
//
// The table is the one list of {name, shape, init, trainable, decay} of a model, built by its
// layers (each declares its own tensors beside its forward: Layer::declare) in model order.
// It decides the arena layout, the safetensors names, the optimizer's weight-decay mask and
// the names the tests report.

#include "linformer/core/arena.h"
#include "linformer/kernels/bf16.h"
#include "linformer/nn/model_spec.h"

#include <memory>
#include <string>
#include <vector>

namespace linformer {

enum class Init {
  normal,       // N(0, init_std)
  ones,         // LayerNorm weights
  zeros,        // biases
  embedding,    // N(0, init_std), <pad> row zero
  projection,   // Linformer E/F: as spec.projection_init says
  conv_window,  // conv filters: 1/s (start as mean pooling)
  sinusoidal,   // (n, C) positions: √2·init_std·sin/cos(t / 10000^(2i/C)), RMS init_std
};

struct ParamSpec {
  std::string name;
  Shape shape;
  Init init;
  bool trainable;  // false: frozen projections (no gradient, no update)
  bool decay;      // weight decay applies (not to biases and LayerNorm weights by default)
};

class ParameterTable {
 public:
  void add(std::string name, Shape shape, Init init, bool decay, bool trainable = true) {
    entries_.push_back({std::move(name), shape, init, trainable, decay});
  }
  const std::vector<ParamSpec>& entries() const { return entries_; }

 private:
  std::vector<ParamSpec> entries_;
};

// Values and gradients, one arena each, laid out by the table. Gradients exist for
// every entry (zero and untouched for frozen ones) so that both arenas share offsets.
class Parameters {
 public:
  Parameters(const ModelSpec& spec, const ParameterTable& table);

  const ModelSpec& spec() const { return spec_; }
  const std::vector<ParamSpec>& table() const { return table_; }
  const Arena<float>& values() const { return values_; }
  const Arena<float>& grads() const { return grads_; }
  TensorView<float> value(const std::string& name) const { return values_.view(name); }
  TensorView<float> grad(const std::string& name) const { return grads_.view(name); }
  bool contains(const std::string& name) const { return values_.layout().contains(name); }
  int64_t count() const;  // number of parameters (without padding)

  // Fills every tensor as its Init says, from Philox streams keyed by (seed, tensor name).
  void initialize(uint64_t seed);
  void zero_grads() const { grads_.zero(); }

  // bf16 copies of the values, the weight operands of the bf16 matmuls (train.precision =
  // "bf16"): element i of the copies is to_bf16(values().data()[i]), at the values' offsets.
  // Kept current by initialize(), load_weights() and AdamW::step (written in its pass, so an
  // update reads and writes the arena once); whoever else writes values calls values_changed().
  // Parameters made while the matmuls take bf16 operands (matmul_bf16_operands()) keep them.
  void keep_bf16_copies();
  bf16* bf16_copies() const;  // nullptr unless keep_bf16_copies() was called
  TensorView<const bf16> value_bf16(const std::string& name) const;
  // value_bf16(name) when the copies are kept, else an empty view.
  TensorView<const bf16> value_bf16_if_kept(const std::string& name) const {
    return bf16_values_ ? value_bf16(name) : TensorView<const bf16>();
  }
  void values_changed() const;  // refreshes the bf16 copies, if kept

 private:
  static ArenaLayout layout_for(const std::vector<ParamSpec>& table);

  ModelSpec spec_;
  std::vector<ParamSpec> table_;
  Arena<float> values_;
  Arena<float> grads_;
  std::unique_ptr<Arena<uint16_t>> bf16_values_;  // bf16 bits, the values' layout
};

}  // namespace linformer

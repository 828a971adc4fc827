#pragma once
// The encoder every task shares: embedding, L encoder blocks and (pre-LN) a final LayerNorm,
// from token ids to the final states (B, T, C). The masked-LM model and the sequence
// classifier put their own head on it.
//
// Capacity (largest batch) is fixed at construction; its buffers are reserved in the
// caller's workspace, which allocates them all at once.

#include "linformer/layers/embedding.h"
#include "linformer/layers/encoder_block.h"
#include "linformer/layers/layer_norm.h"
#include "linformer/model/stage_times.h"

#include <functional>
#include <memory>
#include <vector>

namespace linformer {

// Told during backward that the parameter gradients from an element offset of the gradient
// arena to its end hold their final values for this pass (data parallel: their allreduce can
// start while the backward pass goes on). The offsets only decrease; the last call says 0.
using GradientsFinalFrom = std::function<void(size_t offset)>;

class Encoder {
 public:
  // Reserves its buffers in ws; `timer` counts its stages ("embedding", "block l", "final_ln").
  Encoder(const ModelSpec& spec, const Parameters& params, Workspace& ws, int64_t max_batch, StageTimer& timer);
  // embed.*, the blocks' tensors (and the shared Linformer projections), final_ln (pre-LN).
  static void declare(ParameterTable& table, const ModelSpec& spec);
  // Matmul FLOPs of one forward pass over B rows of T tokens (backward: twice as many).
  // last_rows: the last block's rows per sequence (QueryRows), 0 for all T.
  static double forward_flops(const ModelSpec& spec, int64_t B, int64_t T, int64_t last_rows = 0);
  static std::vector<std::string> stage_names(const ModelSpec& spec);

  // The padding mask's memory: not reserved in a plan that allocates nothing.
  void allocate_padding_mask();

  // ids (B, T), <pad> after each row's length; lengths (B), 1 ≤ lengths[b] ≤ T. Returns the
  // final states (B, T, C), valid until the next forward.
  // last_rows, when given (selects_last_queries() only): the last block's output only at those rows,
  // and the final states (B, last_rows->Tq, C); it must stay valid until backward().
  TensorView<const float> forward(int64_t B, int64_t T, const int32_t* ids, const int32_t* lengths, const Pass& pass,
                                  const QueryRows* last_rows = nullptr);
  TensorView<const float> output() const;  // (B, T or Tq, C) of the last forward
  // Whether forward() can take the last block's rows (its attention projects queries apart).
  bool selects_last_queries() const { return blocks_.back()->selects_queries(); }
  // The buffer (B, T, C) the head writes the gradient of the final states into before backward().
  TensorView<float> output_gradient() const;
  // From output_gradient() back to the embedding: parameter gradients accumulate. The batch
  // (ids, lengths) must be the last forward's. `final_from`, if given, hears after each block
  // where its tensors begin (every tensor after them, final_ln and the head's, is done by then:
  // the table lists the head last and the shared projections before the blocks) and 0 at the end.
  void backward(const int32_t* ids, const Pass& pass, const GradientsFinalFrom& final_from = {});
  // The offsets backward() tells `final_from`, in its order (the same for every batch).
  std::vector<size_t> gradients_final_offsets() const;

 private:
  const ModelSpec& spec_;
  const Workspace& ws_;
  StageTimer& timer_;
  std::unique_ptr<Embedding> embedding_;
  std::vector<std::unique_ptr<EncoderBlock>> blocks_;
  std::unique_ptr<LayerNorm> final_ln_;
  // hidden_[l]: the input of block l (B, T, C); hidden_[L] the last output. Inference: two buffers, alternating.
  std::vector<Buffer<float>> hidden_;
  std::vector<size_t> block_grads_begin_;          // (L) gradient-arena offset of block l's first tensor
  Buffer<float> final_, final_mean_, final_rstd_;  // pre-LN: (B, T, C), (B, T), (B, T)
  Buffer<float> d_hidden_a_, d_hidden_b_;          // backward scratch (B, T, C) ×2
  int64_t key_valid_capacity_ = 0;                 // B·n
  std::vector<uint8_t> key_valid_;                 // (B, T): 1 at real tokens
  BatchGeometry geometry_;
  const QueryRows* last_rows_ = nullptr;  // the last forward's
  int64_t output_T_ = 0;                  // rows per sequence of the final states: T or Tq
};

}  // namespace linformer

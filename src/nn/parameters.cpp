#include "linformer/nn/parameters.h"

#include "linformer/core/rng.h"
#include "linformer/kernels/matmul.h"

#include <cmath>

namespace linformer {

using config::ProjectionInit;

ArenaLayout Parameters::layout_for(const std::vector<ParamSpec>& table) {
  ArenaLayout layout(sizeof(float));
  for (const auto& p : table) layout.add(p.name, p.shape);
  return layout;
}

Parameters::Parameters(const ModelSpec& spec, const ParameterTable& table)
    : spec_(spec), table_(table.entries()), values_(layout_for(table_)), grads_(layout_for(table_)) {
  // A model built while the matmuls take bf16 operands (train.precision = "bf16") gives its
  // layers the weights' bf16 copies, so no step rounds a weight again.
  if (matmul_bf16_operands()) keep_bf16_copies();
}

void Parameters::keep_bf16_copies() {
  if (bf16_values_) return;
  ArenaLayout layout(sizeof(uint16_t));
  layout.add("values", Shape{static_cast<int64_t>(values_.numel())});
  bf16_values_ = std::make_unique<Arena<uint16_t>>(std::move(layout));
  values_changed();
}

bf16* Parameters::bf16_copies() const { return bf16_values_ ? reinterpret_cast<bf16*>(bf16_values_->data()) : nullptr; }

TensorView<const bf16> Parameters::value_bf16(const std::string& name) const {
  LF_CHECK(bf16_values_, "bf16 copy of '{}' asked for, but the parameters keep none", name);
  const auto& entry = values_.layout().entry(values_.layout().index_of(name));
  return TensorView<const bf16>(bf16_copies() + entry.offset, entry.shape);
}

void Parameters::values_changed() const {
  if (bf16_values_) convert_to_bf16(values_.data(), bf16_copies(), values_.numel());
}

int64_t Parameters::count() const {
  int64_t n = 0;
  for (const auto& p : table_) n += p.shape.numel();
  return n;
}

void Parameters::initialize(uint64_t seed) {
  const float init_std = static_cast<float>(spec_.init_std);  // products in float, as they always were
  for (const auto& p : table_) {
    const TensorView<float> v = value(p.name);
    float* x = v.data();
    const int64_t count = v.numel();
    Rng rng(seed, stream_id({hash_string(p.name)}));
    switch (p.init) {
      case Init::zeros:
        for (int64_t i = 0; i < count; ++i) x[i] = 0.0f;
        break;
      case Init::ones:
        for (int64_t i = 0; i < count; ++i) x[i] = 1.0f;
        break;
      case Init::normal:
      case Init::embedding:
        for (int64_t i = 0; i < count; ++i) x[i] = init_std * rng.normal();
        if (p.init == Init::embedding)
          for (int64_t c = 0; c < v.size(1); ++c) x[c] = 0.0f;  // <pad> = id 0
        break;
      case Init::projection: {
        const int64_t K = v.size(v.rank() - 2), n = v.size(v.rank() - 1);
        switch (spec_.projection_init) {
          case ProjectionInit::normal:
            for (int64_t i = 0; i < count; ++i) x[i] = init_std * rng.normal();
            break;
          case ProjectionInit::paper: {
            const float std = 1.0f / std::sqrt(static_cast<float>(K));
            for (int64_t i = 0; i < count; ++i) x[i] = std * rng.normal();
            break;
          }
          case ProjectionInit::xavier: {
            const float bound = std::sqrt(6.0f / static_cast<float>(n + K));
            for (int64_t i = 0; i < count; ++i) x[i] = bound * (2.0f * rng.uniform() - 1.0f);
            break;
          }
          case ProjectionInit::local:  // every (K, n) matrix: row j averages a window of neighbours
            for (int64_t m = 0; m < count / (K * n); ++m)
              for (int64_t j = 0; j < K; ++j) {
                const int64_t begin = j * n / K, end = (j + 1) * n / K;  // windows tile [0, n)
                float* row = x + (m * K + j) * n;
                for (int64_t t = 0; t < n; ++t)
                  row[t] = t >= begin && t < end ? 1.0f / static_cast<float>(end - begin) : 0.0f;
              }
            break;
        }
        break;
      }
      case Init::sinusoidal: {
        // Each sin/cos pair has mean square 1/2: the √2 gives the table the RMS init_std of a learned one.
        const int64_t C = v.size(1);
        const double amplitude = std::sqrt(2.0) * spec_.init_std;
        for (int64_t c = 0; c < C; ++c) {
          const double wavelength = std::pow(10000.0, static_cast<double>(c - c % 2) / C);  // 10000^(2i/C)
          for (int64_t t = 0; t < v.size(0); ++t) {
            const double angle = static_cast<double>(t) / wavelength;
            x[t * C + c] = static_cast<float>(amplitude * (c % 2 == 0 ? std::sin(angle) : std::cos(angle)));
          }
        }
        break;
      }
      case Init::conv_window: {
        const float w = 1.0f / static_cast<float>(v.size(v.rank() - 1));
        for (int64_t i = 0; i < count; ++i) x[i] = w;
        break;
      }
    }
  }
  values_changed();
}

}  // namespace linformer

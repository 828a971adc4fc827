#pragma once
// One Linformer compression operator P along the sequence axis: (B, T, C) -> (B, K, C), with
// K = K_l of the layer and s = n / K the window of the pooling and conv kinds (README "The model"):
//   linear  P(Y) = E[:, :T] Y             E (K, n), or per head E_h (H, K, n) on head columns
//   mean    P(Y)_j = Σ_{t in window j} Y_t / s
//   max     P(Y)_j = max over window j's real rows (0 for a window with none)
//   conv    P(Y)_j = Σ_r w[r] Y_{js+r}    w (s), or per head w_h (H, s) on head columns
// Parameter-free for mean and max; E and w are parameters named by Attention::projection_names.

#include "linformer/kernels/matmul.h"
#include "linformer/layers/pass.h"
#include "linformer/nn/model_spec.h"
#include "linformer/nn/parameters.h"
#include "linformer/nn/workspace.h"

#include <string>

namespace linformer {

// Zeroes rows t ≥ lengths[b] of a (B, T, C) strided view.
void zero_padding_rows(const BatchGeometry& g, TensorView<float> x);

class Compression {
 public:
  Compression() = default;
  // `name`: the parameter (empty for pooling). bf16_scratch: reserve the shared scratch that the
  // linear kind's backward rounds its output gradient into (the bf16 path of compress-first).
  Compression(const ModelSpec& spec, const Parameters& params, const std::string& name, Workspace& ws, int layer,
              int64_t max_batch, bool bf16_scratch);

  // part (B, T, C), strided, padded rows zero -> out (B, K, C), strided; overwrites out.
  // part_bf16, when given (the bf16 path's cached x), is part's rounding, read by the linear kind.
  void forward(const BatchGeometry& g, TensorView<const float> part, TensorView<float> out,
               TensorView<const bf16> part_bf16 = {}) const;
  // In the forward pass: out = P(part). So d_part (=|+= by mode) Pᵀ d_out with padded rows zeroed,
  // and dE / dw += … (when trainable).
  void backward(const BatchGeometry& g, TensorView<const float> d_out, TensorView<const float> part,
                TensorView<float> d_part, Accumulate mode, TensorView<const bf16> part_bf16 = {}) const;

 private:
  void linear_forward(const BatchGeometry& g, TensorView<const float> part, TensorView<float> out,
                      TensorView<const bf16> part_bf16) const;
  void linear_backward(const BatchGeometry& g, TensorView<const float> d_out, TensorView<const float> part,
                       TensorView<float> d_part, Accumulate mode, TensorView<const bf16> part_bf16) const;
  void per_head_linear_forward(const BatchGeometry& g, TensorView<const float> part, TensorView<float> out) const;
  void per_head_linear_backward(const BatchGeometry& g, TensorView<const float> d_out, TensorView<const float> part,
                                TensorView<float> d_part, Accumulate mode) const;
  void window_forward(const BatchGeometry& g, TensorView<const float> part, TensorView<float> out) const;
  void window_backward(const BatchGeometry& g, TensorView<const float> d_out, TensorView<const float> part,
                       TensorView<float> d_part, Accumulate mode) const;
  void conv_filter_backward(const BatchGeometry& g, TensorView<const float> d_out, TensorView<const float> part) const;

  config::ProjectionKind kind_ = config::ProjectionKind::linear;
  int64_t K_ = 0, n_ = 0, C_ = 0, H_ = 0, D_ = 0;
  int64_t s_ = 0;                   // the window n / K
  bool per_head_ = false;           // E (H, K, n) or w (H, s): one per head, on its D columns
  TensorView<float> value_, grad_;  // E (K, n) / (H, K, n), w (s) / (H, s); empty for pooling
  bool trainable_ = false;
  TensorView<const bf16> value_bf16_;  // value's bf16 copy, when the parameters keep them
  const Workspace* ws_ = nullptr;
  Buffer<bf16> d_out_bf16_;  // backward scratch (B, K, C): d_out rounded once (bf16 path)
};

}  // namespace linformer

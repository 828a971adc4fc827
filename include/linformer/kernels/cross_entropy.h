#pragma once
// Fused log-softmax + negative log-likelihood over (rows, V) logits, with the
// gradient written in place of the logits.

#include "linformer/kernels/bf16.h"

#include <cstdint>

namespace linformer {

struct CrossEntropyResult {
  double loss_sum;  // Σ_rows -log softmax(logits)[target], nats
  int64_t correct;  // rows whose argmax equals the target
};

// Computes the loss; when `grad_scale` != 0, overwrites logits with
// grad_scale * (softmax(logits) - onehot(target)), the gradient of grad_scale * loss_sum.
CrossEntropyResult cross_entropy(float* logits, const int32_t* targets, int64_t rows, int64_t V, float grad_scale);

// The bf16 path, fused: the same loss, the same gradient but written only rounded into grad_bf16
// (rows, V; the logits stay), and its column sums (the output bias's gradient) added into
// column_sums (V) exactly as add_column_sums would add the f32 gradient's.
CrossEntropyResult cross_entropy_bf16_gradient(const float* logits, const int32_t* targets, int64_t rows, int64_t V,
                                               float grad_scale, bf16* grad_bf16, float* column_sums);

}  // namespace linformer

#pragma once
// Fused log-softmax + negative log-likelihood over (rows, V) logits, with the
// gradient written in place of the logits.

#include <cstdint>

namespace linformer {

struct CrossEntropyResult {
  double loss_sum;  // Σ_rows -log softmax(logits)[target], nats
  int64_t correct;  // rows whose argmax equals the target
};

// Computes the loss; when `grad_scale` != 0, overwrites logits with
// grad_scale * (softmax(logits) - onehot(target)), the gradient of grad_scale * loss_sum.
CrossEntropyResult cross_entropy(float* logits, const int32_t* targets, int64_t rows, int64_t V, float grad_scale);

}  // namespace linformer

#pragma once
// AdamW (Loshchilov & Hutter; torch.optim.AdamW semantics) over the whole parameter arena:
//   p ← p − lr·wd·p   (decayed tensors only)
//   m ← β1 m + (1 − β1) g;  v ← β2 v + (1 − β2) g²
//   p ← p − lr · (m / (1 − β1^t)) / (sqrt(v / (1 − β2^t)) + ε)
// One flat OpenMP loop; frozen tensors and the arena's alignment padding are skipped.
// Weight decay applies to tensors whose table entry says so (not biases and LayerNorm
// weights), or to every trainable tensor with optim.decay_bias_and_norm.

#include "linformer/config/recipe.h"
#include "linformer/nn/parameters.h"

#include <cstdint>
#include <vector>

namespace linformer {

class AdamW {
 public:
  AdamW(Parameters& params, const config::OptimConfig& optim);

  // One update with the gradients in params.grads() and learning rate `lr`.
  void step(double lr);

  int64_t steps() const { return steps_; }
  void set_steps(int64_t steps) { steps_ = steps; }
  const Arena<float>& first_moment() const { return m_; }
  const Arena<float>& second_moment() const { return v_; }
  void reset();  // moments and step count to zero (fine-tuning from a pretrained model)

 private:
  Parameters& params_;
  config::OptimConfig optim_;
  Arena<float> m_, v_;
  std::vector<uint8_t> flags_;  // per arena element: kTrainable | kDecay
  int64_t steps_ = 0;
};

// The global L2 norm of the trainable gradients (double accumulation).
double gradient_norm(const Parameters& params);
// Scales every gradient by `factor` (clipping: factor = clip / norm).
void scale_gradients(const Parameters& params, float factor);

}  // namespace linformer

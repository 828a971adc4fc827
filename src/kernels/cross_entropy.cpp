#include "linformer/kernels/cross_entropy.h"

#include "linformer/core/check.h"

#include "linformer/kernels/fast_math.h"

#include <cmath>

namespace linformer {

CrossEntropyResult cross_entropy(float* logits, const int32_t* targets, int64_t rows, int64_t V, float grad_scale) {
  double loss = 0;
  int64_t correct = 0;
  bool bad_target = false;
#pragma omp parallel for schedule(static) reduction(+ : loss, correct) reduction(|| : bad_target)
  for (int64_t r = 0; r < rows; ++r) {
    float* z = logits + r * V;
    const int32_t t = targets[r];
    if (t < 0 || t >= V) {
      bad_target = true;
      continue;
    }
    int64_t argmax = 0;
    for (int64_t j = 1; j < V; ++j)
      if (z[j] > z[argmax]) argmax = j;
    const float max = z[argmax];
    double sum = 0;
    for (int64_t j = 0; j < V; ++j) sum += fast_exp(z[j] - max);
    const double log_sum = std::log(sum);
    loss += log_sum - (z[t] - max);
    correct += argmax == t;
    if (grad_scale != 0.0f) {
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t j = 0; j < V; ++j) z[j] = grad_scale * fast_exp(z[j] - max) * inv;
      z[t] -= grad_scale;
    }
  }
  LF_CHECK(!bad_target, "a target id is outside the vocabulary [0, {})", V);
  return {loss, correct};
}

}  // namespace linformer

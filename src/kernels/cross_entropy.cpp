#include "linformer/kernels/cross_entropy.h"

#include "linformer/core/check.h"
#include "linformer/kernels/fast_math.h"
#include "linformer/kernels/kernel_timing.h"

#include <algorithm>
#include <cmath>

namespace linformer {

CrossEntropyResult cross_entropy(float* logits, const int32_t* targets, int64_t rows, int64_t V, float grad_scale) {
  const KernelTimer timer(KernelKind::cross_entropy);
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
    // The maximum and the sum as SIMD reductions, then the first index holding the maximum.
    float max = z[0];
#pragma omp simd reduction(max : max)
    for (int64_t j = 1; j < V; ++j) max = std::max(max, z[j]);
    int64_t argmax = 0;
    while (argmax < V - 1 && z[argmax] != max) ++argmax;
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < V; ++j) sum += fast_exp(z[j] - max);
    const double log_sum = std::log(sum);
    loss += log_sum - (z[t] - max);
    correct += argmax == t;
    if (grad_scale != 0.0f) {
      const float inv = static_cast<float>(1.0 / sum);
#pragma omp simd
      for (int64_t j = 0; j < V; ++j) z[j] = grad_scale * fast_exp(z[j] - max) * inv;
      z[t] -= grad_scale;
    }
  }
  LF_CHECK(!bad_target, "a target id is outside the vocabulary [0, {})", V);
  return {loss, correct};
}

}  // namespace linformer

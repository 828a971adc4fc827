#include "linformer/kernels/cross_entropy.h"

#include "linformer/core/check.h"
#include "linformer/kernels/fast_math.h"
#include "linformer/kernels/kernel_timing.h"
#include "linformer/kernels/reduce.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace linformer {

namespace {

// Both entry points: with grad_bf16 null, the gradient overwrites the logits (when grad_scale !=
// 0); otherwise it is written only rounded into grad_bf16 and its column sums go into
// column_sums, summed exactly as add_column_sums sums (per-thread double partials over the same
// static split of the rows, then the threads in order), so both paths give the same bias gradient.
CrossEntropyResult cross_entropy_rows(float* logits, const int32_t* targets, int64_t rows, int64_t V, float grad_scale,
                                      bf16* grad_bf16, float* column_sums) {
  const KernelTimer timer(KernelKind::cross_entropy);
  int64_t correct = 0;
  bool bad_target = false;
  const ColumnSums sums(grad_bf16 ? V : 0);  // bf16 path: the gradient's column sums
  // The threads' losses added in thread order, not as they finish (see sum_in_thread_order).
  std::vector<double> thread_loss(static_cast<size_t>(omp_get_max_threads()), 0.0);  // [threads]
#pragma omp parallel reduction(+ : correct) reduction(|| : bad_target)
  {
    double* acc = sums.for_this_thread();
    double& loss = thread_loss[static_cast<size_t>(omp_get_thread_num())];
    std::vector<float> row(grad_bf16 ? static_cast<size_t>(V) : 0);  // (V) bf16 path: a gradient row in f32
#pragma omp for schedule(static)
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
      if (grad_scale == 0.0f) continue;
      const float inv = static_cast<float>(1.0 / sum);
      // The f32 gradient row: over the logits, or in the thread's row when they must stay.
      float* d = grad_bf16 ? row.data() : z;
#pragma omp simd
      for (int64_t j = 0; j < V; ++j) d[j] = grad_scale * fast_exp(z[j] - max) * inv;
      d[t] -= grad_scale;
      if (grad_bf16) {
        bf16* g = grad_bf16 + r * V;
#pragma omp simd
        for (int64_t j = 0; j < V; ++j) {
          g[j] = to_bf16(d[j]);
          acc[j] += d[j];
        }
      }
    }
  }
  LF_CHECK(!bad_target, "a target id is outside the vocabulary [0, {})", V);
  if (grad_bf16 && grad_scale != 0.0f) sums.add_into(column_sums);
  double loss = 0;
  for (const double l : thread_loss) loss += l;
  return {loss, correct};
}

}  // namespace

CrossEntropyResult cross_entropy(float* logits, const int32_t* targets, int64_t rows, int64_t V, float grad_scale) {
  return cross_entropy_rows(logits, targets, rows, V, grad_scale, nullptr, nullptr);
}

CrossEntropyResult cross_entropy_bf16_gradient(const float* logits, const int32_t* targets, int64_t rows, int64_t V,
                                               float grad_scale, bf16* grad_bf16, float* column_sums) {
  LF_CHECK(grad_bf16 != nullptr && column_sums != nullptr, "cross_entropy_bf16_gradient without its outputs");
  return cross_entropy_rows(const_cast<float*>(logits), targets, rows, V, grad_scale, grad_bf16, column_sums);
}

}  // namespace linformer

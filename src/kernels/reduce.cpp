#include "linformer/kernels/reduce.h"

#include "linformer/kernels/kernel_timing.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace linformer {

void add_into(float* y, const float* x, int64_t n) {
  const KernelTimer timer(KernelKind::reduce);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

ColumnSums::ColumnSums(int64_t cols) : cols_(cols), threads_(omp_get_max_threads()) {
  // Grows once per calling thread and is reused; shared with the team of the next region.
  thread_local std::vector<double> partial;
  partial.assign(static_cast<size_t>(threads_) * static_cast<size_t>(cols), 0.0);
  sums_ = partial.data();
}

double* ColumnSums::for_this_thread() const {
  return sums_ + static_cast<size_t>(omp_get_thread_num()) * static_cast<size_t>(cols_);
}

void ColumnSums::add_into(float* out) const {
  for (int t = 0; t < threads_; ++t)
    for (int64_t c = 0; c < cols_; ++c) out[c] += static_cast<float>(sums_[static_cast<size_t>(t) * cols_ + c]);
}

void add_column_sums(const float* x, int64_t rows, int64_t cols, int64_t row_stride, float* out) {
  const KernelTimer timer(KernelKind::reduce);
  for_rows_adding_column_sums(rows, cols, out, [&](int64_t r, double* acc) {
    const float* xr = x + r * row_stride;
    for (int64_t c = 0; c < cols; ++c) acc[c] += xr[c];
  });
}

void gather_rows(const float* x, const int32_t* index, float* y, int64_t rows, int64_t C) {
  const KernelTimer timer(KernelKind::reduce);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(y + r * C, x + static_cast<int64_t>(index[r]) * C, sizeof(float) * static_cast<size_t>(C));
}

void gather_rows(const bf16* x, const int32_t* index, bf16* y, int64_t rows, int64_t C) {
  const KernelTimer timer(KernelKind::reduce);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(y + r * C, x + static_cast<int64_t>(index[r]) * C, sizeof(bf16) * static_cast<size_t>(C));
}

void scatter_add_rows(const float* x, const int32_t* index, float* y, int64_t rows, int64_t C) {
  const KernelTimer timer(KernelKind::reduce);
  // Threads own disjoint column blocks, so repeated indices never race.
  constexpr int64_t kBlock = 16;
  const int64_t blocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * C;
      float* yr = y + static_cast<int64_t>(index[r]) * C;
      for (int64_t c = c0; c < c1; ++c) yr[c] += xr[c];
    }
  }
}

}  // namespace linformer

#pragma once
// Small reductions and gathers used around the matmuls.

#include "linformer/kernels/bf16.h"

#include <omp.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace linformer {

// out[c] += Σ_r x[r * row_stride + c] for c < cols (bias gradients). Accumulates.
void add_column_sums(const float* x, int64_t rows, int64_t cols, int64_t row_stride, float* out);

// The column sums add_column_sums computes, for a kernel that produces the rows itself (a fused
// gradient pass): each OpenMP thread adds its rows into its own double partial sums
// (for_this_thread(), inside a parallel region whose loop over rows is `omp for
// schedule(static)`), then add_into() adds the threads' partials in thread order. The same split
// and order as add_column_sums, so the sums are bit-identical to its.
class ColumnSums {
 public:
  explicit ColumnSums(int64_t cols);  // on the thread that will start the parallel region
  double* for_this_thread() const;
  void add_into(float* out) const;

 private:
  int64_t cols_;
  int threads_;
  double* sums_;  // (threads, cols): the constructing thread's reusable buffer
};

// Runs row(r, acc) for r < rows over the OpenMP threads (static split), acc the thread's double
// column sums (cols) for row() to add its row into, then adds the sums into out.
template <class Row>
void for_rows_adding_column_sums(int64_t rows, int64_t cols, float* out, Row row) {
  const ColumnSums sums(cols);
#pragma omp parallel
  {
    double* acc = sums.for_this_thread();
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) row(r, acc);
  }
  sums.add_into(out);
}

// Σ term(i) for i < n, in double, over the OpenMP threads: each thread sums its static share of
// the indices (vectorised), then the threads' sums are added in thread order, so the result
// depends on the thread count, never on timing. (An OpenMP reduction(+) adds the threads' sums
// in the order they finish: with a running total or more than two threads the last bits could
// then vary from run to run, which exact resume cannot have.)
template <class Term>
double sum_in_thread_order(int64_t n, Term term) {
  std::vector<double> partial(static_cast<size_t>(omp_get_max_threads()), 0.0);  // [threads]
#pragma omp parallel
  {
    const int64_t t = omp_get_thread_num(), threads = omp_get_num_threads();
    const int64_t begin = n * t / threads, end = n * (t + 1) / threads;
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = begin; i < end; ++i) sum += term(i);
    partial[static_cast<size_t>(t)] = sum;
  }
  double total = 0;
  for (const double p : partial) total += p;
  return total;
}

// y[i] += x[i] for i < n. Accumulates.
void add_into(float* y, const float* x, int64_t n);

// y[r, :] = x[index[r], :] for r < rows; rows of C floats. Overwrites y.
void gather_rows(const float* x, const int32_t* index, float* y, int64_t rows, int64_t C);
void gather_rows(const bf16* x, const int32_t* index, bf16* y, int64_t rows, int64_t C);

// y[index[r], :] += x[r, :]; rows of C floats. Accumulates; repeated indices are summed.
void scatter_add_rows(const float* x, const int32_t* index, float* y, int64_t rows, int64_t C);

}  // namespace linformer

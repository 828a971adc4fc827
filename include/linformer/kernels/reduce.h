#pragma once
// Small reductions and gathers used around the matmuls.

#include <cstdint>

namespace linformer {

// out[c] += Σ_r x[r * row_stride + c] for c < cols (bias gradients). Accumulates.
void add_column_sums(const float* x, int64_t rows, int64_t cols, int64_t row_stride, float* out);

// y[i] += x[i] for i < n. Accumulates.
void add_into(float* y, const float* x, int64_t n);

// y[r, :] = x[index[r], :] for r < rows; rows of C floats. Overwrites y.
void gather_rows(const float* x, const int32_t* index, float* y, int64_t rows, int64_t C);

// y[index[r], :] += x[r, :]; rows of C floats. Accumulates; repeated indices are summed.
void scatter_add_rows(const float* x, const int32_t* index, float* y, int64_t rows, int64_t C);

}  // namespace linformer

#pragma once
// LayerNorm over the last axis of a (rows, C) buffer, forward and backward side by side.
// Statistics are accumulated in double; mean and 1/std per row are the backward cache.

#include "linformer/kernels/bf16.h"

#include <cstdint>

namespace linformer {

// y = (x - mean) * rstd * gamma + beta, per row. Overwrites y, mean (rows), rstd (rows), and
// y_bf16 (rows, C) with y's rounding when given (the bf16 path: the next matmul's operand).
void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                        int64_t rows, int64_t C, float eps, bf16* y_bf16 = nullptr);

// Given dy: overwrites dx; ACCUMULATES into dgamma and dbeta (C each).
void layer_norm_backward(const float* dy, const float* x, const float* gamma, const float* mean, const float* rstd,
                         float* dx, float* dgamma, float* dbeta, int64_t rows, int64_t C);

}  // namespace linformer

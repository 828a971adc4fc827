#pragma once
// Exact GELU, x · Φ(x) with Φ the standard normal CDF (erf form), elementwise.

#include "linformer/kernels/bf16.h"

#include <cstdint>

namespace linformer {

// y = gelu(x); y may alias x only when the caller does not need x afterwards.
void gelu_forward(const float* x, float* y, int64_t n);

// dx = dy * gelu'(x); overwrites dx (may alias dy).
void gelu_backward(const float* dy, const float* x, float* dx, int64_t n);

// The bf16 path, fused: y = to_bf16(gelu(x)), the next matmul's operand, without an f32 result;
// and gelu_backward without an f32 result either: dx (rows, cols) only rounded into dx_bf16 (the
// previous matmul's operand), its column sums (that matmul's bias gradient) added into
// column_sums as add_column_sums would add them.
void gelu_forward_bf16(const float* x, bf16* y, int64_t n);
void gelu_backward_bf16_column_sums(const float* dy, const float* x, bf16* dx_bf16, int64_t rows, int64_t cols,
                                    float* column_sums);

// y = tanh(x), elementwise; y may alias x.
void tanh_forward(const float* x, float* y, int64_t n);
// dx = dy * (1 - y²) from the forward's output y; overwrites dx (may alias dy).
void tanh_backward(const float* dy, const float* y, float* dx, int64_t n);

}  // namespace linformer

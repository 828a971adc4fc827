#pragma once
// Exact GELU, x · Φ(x) with Φ the standard normal CDF (erf form), elementwise.

#include "linformer/kernels/bf16.h"

#include <cstdint>

namespace linformer {

// Inference: y = gelu(x); y may alias x.
void gelu_forward(const float* x, float* y, int64_t n);
// The bf16 path: y = to_bf16(gelu(x)), the next matmul's operand, without an f32 result.
void gelu_forward_bf16(const float* x, bf16* y, int64_t n);

// Training: the same y, and x overwritten by gelu'(x), all the backward needs of it. Erf and the
// exponential are evaluated once a step, and the backward is a product. y must not alias x.
void gelu_forward_keeping_derivative(float* x_then_derivative, float* y, int64_t n);
void gelu_forward_bf16_keeping_derivative(float* x_then_derivative, bf16* y, int64_t n);

// dx = dy * derivative (the forward's gelu'(x)); overwrites dx (may alias dy).
void gelu_backward(const float* dy, const float* derivative, float* dx, int64_t n);
// The bf16 path: dx (rows, cols) only rounded into dx_bf16 (the previous matmul's operand), its
// column sums (that matmul's bias gradient) added into column_sums as add_column_sums would add them.
void gelu_backward_bf16_column_sums(const float* dy, const float* derivative, bf16* dx_bf16, int64_t rows, int64_t cols,
                                    float* column_sums);

// y = tanh(x), elementwise; y may alias x.
void tanh_forward(const float* x, float* y, int64_t n);
// dx = dy * (1 - y²) from the forward's output y; overwrites dx (may alias dy).
void tanh_backward(const float* dy, const float* y, float* dx, int64_t n);

}  // namespace linformer

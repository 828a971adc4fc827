#include "linformer/kernels/activation.h"

#include "linformer/kernels/fast_math.h"
#include "linformer/kernels/kernel_timing.h"
#include "linformer/kernels/reduce.h"

#include <cmath>

namespace linformer {

namespace {
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// y = x Φ(x), so dy/dx = Φ(x) + x φ(x), φ the normal density. Φ's erf and φ share one
// exponential: e^{-u²} with u = x/√2 is e^{-x²/2}.
struct GeluValue {
  float y, derivative;
};
inline GeluValue gelu_and_derivative(float x) {
  const float u = x * kInvSqrt2;
  const float gauss = fast_exp(-u * u);
  const float erf = fast_erf_given_gauss(u, gauss);
  const float cdf = 0.5f * (1.0f + erf);
  const float pdf = kInvSqrt2Pi * gauss;
  return {0.5f * x * (1.0f + erf), cdf + x * pdf};
}

// Inference needs y alone (the compiler drops the derivative's arithmetic): one formula, so
// training and inference give the same y bit for bit.
inline float gelu(float x) { return gelu_and_derivative(x).y; }
}  // namespace

void gelu_forward(const float* x, float* y, int64_t n) {
  const KernelTimer timer(KernelKind::gelu);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = gelu(x[i]);
}

void gelu_forward_bf16(const float* x, bf16* y, int64_t n) {
  const KernelTimer timer(KernelKind::gelu);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = to_bf16(gelu(x[i]));
}

void gelu_forward_keeping_derivative(float* x_then_derivative, float* y, int64_t n) {
  const KernelTimer timer(KernelKind::gelu);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const GeluValue g = gelu_and_derivative(x_then_derivative[i]);
    y[i] = g.y;
    x_then_derivative[i] = g.derivative;
  }
}

void gelu_forward_bf16_keeping_derivative(float* x_then_derivative, bf16* y, int64_t n) {
  const KernelTimer timer(KernelKind::gelu);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const GeluValue g = gelu_and_derivative(x_then_derivative[i]);
    y[i] = to_bf16(g.y);
    x_then_derivative[i] = g.derivative;
  }
}

void gelu_backward(const float* dy, const float* derivative, float* dx, int64_t n) {
  const KernelTimer timer(KernelKind::gelu);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * derivative[i];
}

void gelu_backward_bf16_column_sums(const float* dy, const float* derivative, bf16* dx_bf16, int64_t rows, int64_t cols,
                                    float* column_sums) {
  const KernelTimer timer(KernelKind::gelu);
  for_rows_adding_column_sums(rows, cols, column_sums, [&](int64_t r, double* acc) {
    const float* dyr = dy + r * cols;
    const float* dr = derivative + r * cols;
    bf16* dxr = dx_bf16 + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) {
      const float d = dyr[c] * dr[c];
      dxr[c] = to_bf16(d);
      acc[c] += d;
    }
  });
}

void tanh_forward(const float* x, float* y, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}

void tanh_backward(const float* dy, const float* y, float* dx, int64_t n) {
  // In the forward pass: y = tanh(x). So dy/dx = 1 - y².
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

}  // namespace linformer

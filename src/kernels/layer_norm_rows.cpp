#include "linformer/kernels/layer_norm_rows.h"

#include "linformer/kernels/kernel_timing.h"

#include <omp.h>

#include <cmath>
#include <vector>

namespace linformer {

void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                        int64_t rows, int64_t C, float eps, bf16* y_bf16) {
  const KernelTimer timer(KernelKind::layer_norm);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    // Double sums, reassociated across SIMD lanes (a serial sum would leave the loop scalar).
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < C; ++c) sum += xr[c];
    const double mu = sum / static_cast<double>(C);
    double var = 0;
#pragma omp simd reduction(+ : var)
    for (int64_t c = 0; c < C; ++c) var += (xr[c] - mu) * (xr[c] - mu);
    const double rs = 1.0 / std::sqrt(var / static_cast<double>(C) + eps);
    mean[r] = static_cast<float>(mu);
    rstd[r] = static_cast<float>(rs);
    const float m = static_cast<float>(mu), s = static_cast<float>(rs);
    float* yr = y + r * C;
    if (y_bf16) {
      bf16* br = y_bf16 + r * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) {
        yr[c] = (xr[c] - m) * s * gamma[c] + beta[c];
        br[c] = to_bf16(yr[c]);
      }
    } else {
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) yr[c] = (xr[c] - m) * s * gamma[c] + beta[c];
    }
  }
}

void layer_norm_backward(const float* dy, const float* x, const float* gamma, const float* mean, const float* rstd,
                         float* dx, float* dgamma, float* dbeta, int64_t rows, int64_t C) {
  const KernelTimer timer(KernelKind::layer_norm);
  // In the forward pass: xhat = (x - mean) * rstd; y = xhat * gamma + beta. So:
  //   dgamma += Σ_rows dy * xhat;  dbeta += Σ_rows dy
  //   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  g = dy * gamma
  const int threads = omp_get_max_threads();
  // Per-thread partial sums of dgamma and dbeta; the buffer grows once and is reused.
  thread_local std::vector<double> partial;
  partial.assign(static_cast<size_t>(threads) * 2 * C, 0.0);
  double* const sums = partial.data();  // the calling thread's buffer, shared with the team
#pragma omp parallel
  {
    double* dg = sums + static_cast<size_t>(omp_get_thread_num()) * 2 * C;
    double* db = dg + C;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * C;
      const float* dyr = dy + r * C;
      const float m = mean[r], s = rstd[r];
      double mean_g = 0, mean_gx = 0;
#pragma omp simd reduction(+ : mean_g, mean_gx)
      for (int64_t c = 0; c < C; ++c) {
        const float xhat = (xr[c] - m) * s;
        const float g = dyr[c] * gamma[c];
        mean_g += g;
        mean_gx += g * xhat;
        dg[c] += dyr[c] * xhat;
        db[c] += dyr[c];
      }
      mean_g /= static_cast<double>(C);
      mean_gx /= static_cast<double>(C);
      float* dxr = dx + r * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) {
        const float xhat = (xr[c] - m) * s;
        dxr[c] = s * (dyr[c] * gamma[c] - static_cast<float>(mean_g) - xhat * static_cast<float>(mean_gx));
      }
    }
  }
  for (int t = 0; t < threads; ++t)
    for (int64_t c = 0; c < C; ++c) {
      dgamma[c] += static_cast<float>(partial[static_cast<size_t>(t) * 2 * C + c]);
      dbeta[c] += static_cast<float>(partial[static_cast<size_t>(t) * 2 * C + C + c]);
    }
}

}  // namespace linformer

#include "linformer/layers/local_band.h"

#include "linformer/core/check.h"
#include "linformer/kernels/fast_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace linformer {

namespace {
// Row t of head (b, h) of a per-head view (B, H, T, D).
template <class T>
T* head_row(const TensorView<T>& x, int64_t b, int64_t h, int64_t t) {
  return x.data() + b * x.stride(0) + h * x.stride(1) + t * x.stride(2);
}

// Explicit simd loops here and below: the reductions may be reordered (the band's scalar loops
// were 26% of a training step at w = 4; results/2026-11-29_zen5_local_band/).
float dot(const float* a, const float* b, int64_t D) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t d = 0; d < D; ++d) sum += a[d] * b[d];
  return sum;
}

// out += Σ_s weights[s] · x_{t+s−w} over the slots whose row exists: a band row times the rows
// it reads (P_band V for the context, d_b K for dQ).
void add_band_rows(const float* weights, const TensorView<const float>& x, int64_t b, int64_t h, int64_t t, int64_t w,
                   float* out) {
  const int64_t T = x.size(2), D = x.size(3), W = 2 * w + 1;
  for (int64_t s = std::max<int64_t>(0, w - t); s < std::min(W, T - t + w); ++s) {
    const float* row = head_row(x, b, h, t + s - w);
    const float weight = weights[s];  // a local: out may alias weights as far as the compiler knows
#pragma omp simd
    for (int64_t d = 0; d < D; ++d) out[d] += weight * row[d];
  }
}

// out = Σ_s band_{i,s} · x_i over the queries i = t − (s − w) that read row t at slot s: the
// transposed product (P_bandᵀ d_ctx for dV, d_bᵀ Q for dK). band: head (b, h)'s (T, W) rows.
void gather_band_rows(const float* band, const TensorView<const float>& x, int64_t b, int64_t h, int64_t t, int64_t w,
                      float* out) {
  const int64_t T = x.size(2), D = x.size(3), W = 2 * w + 1;
  std::fill(out, out + D, 0.0f);
  for (int64_t s = std::max<int64_t>(0, t + w - T + 1); s < std::min(W, t + w + 1); ++s) {
    const int64_t i = t - s + w;
    const float* row = head_row(x, b, h, i);
    const float weight = band[i * W + s];
#pragma omp simd
    for (int64_t d = 0; d < D; ++d) out[d] += weight * row[d];
  }
}

constexpr float kNone = -std::numeric_limits<float>::infinity();  // a slot with no key

void check_heads(const TensorView<const float>& x, const char* what) {
  LF_CHECK(x.shape().rank() == 4 && x.stride(3) == 1, "local band: {} must be per head (B, H, T, D), unit stride",
           what);
}
}  // namespace

void LocalBand::scores(const BatchGeometry& g, TensorView<const float> q, TensorView<const float> k,
                       TensorView<float> band) const {
  check_heads(q, "queries");
  check_heads(k, "keys");
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3), W = width();
  LF_CHECK(band.is_contiguous() && band.size(3) == W, "local band: scores must be (B, H, T, {}) dense", W);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t length = g.lengths ? g.lengths[b] : T;
      for (int64_t t = 0; t < T; ++t) {
        float* out = band.data() + ((b * H + h) * T + t) * W;
        const float* qt = head_row(q, b, h, t);
        for (int64_t s = 0; s < W; ++s) {
          const int64_t j = t + s - w_;
          out[s] = (j >= 0 && j < length) ? dot(qt, head_row(k, b, h, j), D) : kNone;
        }
      }
    }
}

void LocalBand::softmax_forward(float* probs, int64_t S, float* band, int64_t W, int64_t rows, float scale) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    float* p = probs + r * S;
    float* pb = band + r * W;
    float top = kNone;  // S ≥ 1: the compressed keys, always finite
#pragma omp simd reduction(max : top)
    for (int64_t j = 0; j < S; ++j) top = std::max(top, p[j]);
#pragma omp simd reduction(max : top)
    for (int64_t j = 0; j < W; ++j) top = std::max(top, pb[j]);
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < S; ++j) sum += p[j] = fast_exp(scale * (p[j] - top));
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < W; ++j) sum += pb[j] = pb[j] > kNone ? fast_exp(scale * (pb[j] - top)) : 0.0f;
    const float inv = static_cast<float>(1.0 / sum);
#pragma omp simd
    for (int64_t j = 0; j < S; ++j) p[j] *= inv;
#pragma omp simd
    for (int64_t j = 0; j < W; ++j) pb[j] *= inv;
  }
}

void LocalBand::context_forward(TensorView<const float> band_probs, TensorView<const float> v,
                                TensorView<float> ctx) const {
  check_heads(v, "values");
  const int64_t B = v.size(0), H = v.size(1), T = v.size(2), W = width();
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        add_band_rows(band_probs.data() + ((b * H + h) * T + t) * W, v, b, h, t, w_, head_row(ctx, b, h, t));
}

void LocalBand::context_backward(TensorView<const float> band_probs, TensorView<const float> v,
                                 TensorView<const float> d_ctx, TensorView<float> d_band, TensorView<float> d_v) const {
  const int64_t B = v.size(0), H = v.size(1), T = v.size(2), D = v.size(3), W = width();
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        // Query t's slots: dP_band = d_ctx_t · v_j.
        float* db = d_band.data() + ((b * H + h) * T + t) * W;
        const float* dc = head_row(d_ctx, b, h, t);
        for (int64_t s = 0; s < W; ++s) {
          const int64_t j = t + s - w_;
          db[s] = (j >= 0 && j < T) ? dot(dc, head_row(v, b, h, j), D) : 0.0f;
        }
        // Key t's gradient, gathered from the queries that read it.
        gather_band_rows(band_probs.data() + (b * H + h) * T * W, d_ctx, b, h, t, w_, head_row(d_v, b, h, t));
      }
}

void LocalBand::softmax_backward(float* d_probs, const float* probs, int64_t S, float* d_band, const float* band_probs,
                                 int64_t W, int64_t rows, float scale) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    float* dp = d_probs + r * S;
    float* db = d_band + r * W;
    const float* p = probs + r * S;
    const float* pb = band_probs + r * W;
    double inner = 0;
#pragma omp simd reduction(+ : inner)
    for (int64_t j = 0; j < S; ++j) inner += static_cast<double>(dp[j]) * p[j];
#pragma omp simd reduction(+ : inner)
    for (int64_t j = 0; j < W; ++j) inner += static_cast<double>(db[j]) * pb[j];
    const float centre = static_cast<float>(inner);
#pragma omp simd
    for (int64_t j = 0; j < S; ++j) dp[j] = scale * p[j] * (dp[j] - centre);
#pragma omp simd
    for (int64_t j = 0; j < W; ++j) db[j] = scale * pb[j] * (db[j] - centre);
  }
}

void LocalBand::scores_backward(TensorView<const float> d_band, TensorView<const float> q, TensorView<const float> k,
                                TensorView<float> d_q, TensorView<float> d_k) const {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), W = width();
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        add_band_rows(d_band.data() + ((b * H + h) * T + t) * W, k, b, h, t, w_, head_row(d_q, b, h, t));
        gather_band_rows(d_band.data() + (b * H + h) * T * W, q, b, h, t, w_, head_row(d_k, b, h, t));
      }
}

}  // namespace linformer

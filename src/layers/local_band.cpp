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

// out (D) += weight · x.
void add_scaled(float weight, const float* x, float* out, int64_t D) {
#pragma omp simd
  for (int64_t d = 0; d < D; ++d) out[d] += weight * x[d];
}

// The slots [first, last) of a query at position t whose key j = t + s − w lies in [0, end).
struct Slots {
  int64_t first, last;
};

// visit(b, h, r, t, keys, row) for every query row r (at position t) of every head (b, h), row its
// index in the (B, H, Tq, W) band and keys the slots whose key lies in [0, lengths_b) (T without
// lengths). Each head by one thread, so a head's scatter into dK or dV needs no atomics: `zeroed`
// (per head, (B, H, T, D)), if given, is set to 0 at every position first.
template <class Visit>
void for_each_query_row(const BandRows& rows, int64_t B, int64_t H, int64_t w, const int32_t* lengths,
                        const TensorView<float>& zeroed, Visit visit) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      if (zeroed.data())
        for (int64_t t = 0; t < rows.T; ++t) std::fill_n(head_row(zeroed, b, h, t), zeroed.size(3), 0.0f);
      const int64_t end = lengths ? lengths[b] : rows.T;
      for (int64_t r = 0; r < rows.Tq; ++r) {
        const int64_t t = rows.position(b, r);
        const Slots keys{std::max<int64_t>(0, w - t), std::min(2 * w + 1, end - t + w)};
        visit(b, h, r, t, keys, (b * H + h) * rows.Tq + r);
      }
    }
}

constexpr float kNone = -std::numeric_limits<float>::infinity();  // a slot with no key

void check_heads(const TensorView<const float>& x, const char* what) {
  LF_CHECK(x.shape().rank() == 4 && x.stride(3) == 1, "local band: {} must be per head (B, H, ·, D), unit stride",
           what);
}
}  // namespace

void LocalBand::scores(const BatchGeometry& g, const BandRows& rows, TensorView<const float> q,
                       TensorView<const float> k, TensorView<float> band) const {
  check_heads(q, "queries");
  check_heads(k, "keys");
  const int64_t B = q.size(0), H = q.size(1), D = q.size(3), W = width();
  LF_CHECK(q.size(2) == rows.Tq && k.size(2) == rows.T, "local band: {} query rows and {} keys for Tq {}, T {}",
           q.size(2), k.size(2), rows.Tq, rows.T);
  LF_CHECK(band.is_contiguous() && band.size(2) == rows.Tq && band.size(3) == W,
           "local band: scores must be (B, H, Tq, {}) dense", W);
  for_each_query_row(
      rows, B, H, w_, g.lengths, {}, [&](int64_t b, int64_t h, int64_t r, int64_t t, Slots keys, int64_t row) {
        float* out = band.data() + row * W;
        const float* qr = head_row(q, b, h, r);
        for (int64_t s = 0; s < W; ++s)
          out[s] = (s >= keys.first && s < keys.last) ? dot(qr, head_row(k, b, h, t + s - w_), D) : kNone;
      });
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

void LocalBand::context_forward(const BandRows& rows, TensorView<const float> band_probs, TensorView<const float> v,
                                TensorView<float> ctx) const {
  check_heads(v, "values");
  const int64_t B = v.size(0), H = v.size(1), D = v.size(3), W = width();
  for_each_query_row(rows, B, H, w_, nullptr, {},
                     [&](int64_t b, int64_t h, int64_t r, int64_t t, Slots keys, int64_t row) {
                       const float* p = band_probs.data() + row * W;
                       float* out = head_row(ctx, b, h, r);
                       for (int64_t s = keys.first; s < keys.last; ++s)
                         add_scaled(p[s], head_row(v, b, h, t + s - w_), out, D);
                     });
}

// dK and dV are scattered from the query rows that read them (for_each_query_row: a head per
// thread): the same code serves every row and the last block's masked rows.
void LocalBand::context_backward(const BandRows& rows, TensorView<const float> band_probs, TensorView<const float> v,
                                 TensorView<const float> d_ctx, TensorView<float> d_band, TensorView<float> d_v) const {
  const int64_t B = v.size(0), H = v.size(1), D = v.size(3), W = width();
  for_each_query_row(rows, B, H, w_, nullptr, d_v,
                     [&](int64_t b, int64_t h, int64_t r, int64_t t, Slots keys, int64_t row) {
                       const float* p = band_probs.data() + row * W;
                       float* db = d_band.data() + row * W;
                       const float* dc = head_row(d_ctx, b, h, r);
                       std::fill(db, db + W, 0.0f);
                       for (int64_t s = keys.first; s < keys.last; ++s) {
                         const int64_t j = t + s - w_;
                         db[s] = dot(dc, head_row(v, b, h, j), D);
                         add_scaled(p[s], dc, head_row(d_v, b, h, j), D);
                       }
                     });
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

void LocalBand::scores_backward(const BandRows& rows, TensorView<const float> d_band, TensorView<const float> q,
                                TensorView<const float> k, TensorView<float> d_q, TensorView<float> d_k) const {
  const int64_t B = k.size(0), H = k.size(1), D = k.size(3), W = width();
  for_each_query_row(rows, B, H, w_, nullptr, d_k,
                     [&](int64_t b, int64_t h, int64_t r, int64_t t, Slots keys, int64_t row) {
                       const float* db = d_band.data() + row * W;
                       const float* qr = head_row(q, b, h, r);
                       float* dq = head_row(d_q, b, h, r);
                       for (int64_t s = keys.first; s < keys.last; ++s) {
                         const int64_t j = t + s - w_;
                         add_scaled(db[s], head_row(k, b, h, j), dq, D);
                         add_scaled(db[s], qr, head_row(d_k, b, h, j), D);
                       }
                     });
}

}  // namespace linformer

#include "linformer/layers/compression.h"

#include "linformer/kernels/reduce.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace linformer {

using config::ProjectionKind;

void zero_padding_rows(const BatchGeometry& g, TensorView<float> x) {
  const int64_t C = x.size(2);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < g.B; ++b)
    for (int64_t t = 0; t < g.T; ++t)
      if (t >= g.lengths[b]) std::memset(&x(b, t, 0), 0, sizeof(float) * static_cast<size_t>(C));
}

Compression::Compression(const ModelSpec& spec, const Parameters& params, const std::string& name, Workspace& ws,
                         int layer, int64_t max_batch, bool bf16_scratch)
    : kind_(spec.projection),
      K_(spec.k_per_layer[layer]),
      n_(spec.seq_len),
      C_(spec.d_model),
      H_(spec.heads),
      D_(spec.head_dim()),
      s_(spec.window(layer)),
      ws_(&ws) {
  if (!name.empty()) {
    value_ = params.value(name);
    grad_ = params.grad(name);
    trainable_ = !spec.freeze_projection;
    value_bf16_ = params.value_bf16_if_kept(name);
  }
  // Declared per head ((H, K, n) or (H, s)) for sharing none.
  per_head_ =
      (kind_ == ProjectionKind::linear && value_.rank() == 3) || (kind_ == ProjectionKind::conv && value_.rank() == 2);
  if (bf16_scratch) d_out_bf16_ = ws.reserve_backward<bf16>("attn.d_xc_bf16", {Dim::batch(max_batch), K_, C_});
}

void Compression::forward(const BatchGeometry& g, TensorView<const float> part, TensorView<float> out,
                          TensorView<const bf16> part_bf16) const {
  if (kind_ != ProjectionKind::linear)
    window_forward(g, part, out);
  else if (per_head_)
    per_head_linear_forward(g, part, out);
  else
    linear_forward(g, part, out, part_bf16);
}

void Compression::backward(const BatchGeometry& g, TensorView<const float> d_out, TensorView<const float> part,
                           TensorView<float> d_part, Accumulate mode, TensorView<const bf16> part_bf16) const {
  if (kind_ != ProjectionKind::linear)
    window_backward(g, d_out, part, d_part, mode);
  else if (per_head_)
    per_head_linear_backward(g, d_out, part, d_part, mode);
  else
    linear_backward(g, d_out, part, d_part, mode, part_bf16);
  zero_padding_rows(g, d_part);  // the forward pass zeroed these rows before compressing
}

// ---- linear: E (K, n), the same for every head ----------------------------------------------

void Compression::linear_forward(const BatchGeometry& g, TensorView<const float> part, TensorView<float> out,
                                 TensorView<const bf16> part_bf16) const {
  // out_b (K, C) = E[:, :T] (K, T) · part_b (T, C), E broadcast over the batch.
  const int64_t K = K_, T = g.T;
  const Shape shape{1, K, T}, strides{K * n_, n_, 1};
  if (part_bf16.data() && value_bf16_.data())
    matmul(TensorView<const bf16>(value_bf16_.data(), shape, strides), part_bf16, out);
  else if (part_bf16.data())
    matmul(TensorView<const float>(value_.data(), shape, strides), part_bf16, out);
  else
    matmul(TensorView<const float>(value_.data(), shape, strides), part, out);
}

void Compression::linear_backward(const BatchGeometry& g, TensorView<const float> d_out, TensorView<const float> part,
                                  TensorView<float> d_part, Accumulate mode, TensorView<const bf16> part_bf16) const {
  // In the forward pass: out_b = E[:, :T] part_b. So d_part_b = E[:, :T]ᵀ d_out_b and
  // dE[:, :T] += Σ_b d_out_b part_bᵀ.
  const int64_t B = g.B, T = g.T, K = K_;
  const Shape et_shape{1, T, K}, et_strides{K * n_, 1, n_};
  const TensorView<float> de(grad_.data(), Shape{K, T}, Shape{n_, 1});
  if (part_bf16.data() && value_bf16_.data()) {  // bf16 path: d_out rounded once for all B + 1 products
    const TensorView<const bf16> d_out_bf16 = convert_to_bf16(d_out, ws_->view(d_out_bf16_, Extents{B, T}).data());
    matmul(TensorView<const bf16>(value_bf16_.data(), et_shape, et_strides), d_out_bf16, d_part, mode);
    if (trainable_)
      for (int64_t b = 0; b < B; ++b)
        matmul(d_out_bf16.select(0, b), part_bf16.select(0, b).transpose(0, 1), de, Accumulate::add);
    return;
  }
  matmul(TensorView<const float>(value_.data(), et_shape, et_strides), d_out, d_part, mode);
  if (!trainable_) return;
  for (int64_t b = 0; b < B; ++b) {
    if (part_bf16.data())
      matmul(d_out.select(0, b), part_bf16.select(0, b).transpose(0, 1), de, Accumulate::add);
    else
      matmul(d_out.select(0, b), part.select(0, b).transpose(0, 1), de, Accumulate::add);
  }
}

// ---- linear per head: E_h (H, K, n) on head h's columns ------------------------------------

void Compression::per_head_linear_forward(const BatchGeometry& g, TensorView<const float> part,
                                          TensorView<float> out) const {
  // Per head: out_bh (K, D) = E_h[:, :T] (K, T) · part_bh (T, D).
  const int64_t B = g.B, T = g.T, K = K_, H = H_, D = D_;
  const TensorView<const float> e(value_.data(), Shape{1, H, K, T}, Shape{H * K * n_, K * n_, n_, 1});
  const TensorView<const float> part_h(part.data(), Shape{B, H, T, D}, Shape{part.stride(0), D, part.stride(1), 1});
  matmul(e, part_h, TensorView<float>(out.data(), Shape{B, H, K, D}, Shape{out.stride(0), D, out.stride(1), 1}));
}

void Compression::per_head_linear_backward(const BatchGeometry& g, TensorView<const float> d_out,
                                           TensorView<const float> part, TensorView<float> d_part,
                                           Accumulate mode) const {
  // In the forward pass: out_bh = E_h[:, :T] part_bh. So d_part_bh = E_h[:, :T]ᵀ d_out_bh and
  // dE_h[:, :T] += Σ_b d_out_bh part_bhᵀ.
  const int64_t B = g.B, T = g.T, K = K_, H = H_, D = D_;
  const TensorView<const float> et(value_.data(), Shape{1, H, T, K}, Shape{H * K * n_, K * n_, 1, n_});
  const TensorView<const float> d_out_h(d_out.data(), Shape{B, H, K, D}, Shape{d_out.stride(0), D, d_out.stride(1), 1});
  const TensorView<float> d_part_h(d_part.data(), Shape{B, H, T, D}, Shape{d_part.stride(0), D, d_part.stride(1), 1});
  matmul(et, d_out_h, d_part_h, mode);
  if (!trainable_) return;
  const TensorView<float> de(grad_.data(), Shape{H, K, T}, Shape{K * n_, n_, 1});
  for (int64_t b = 0; b < B; ++b) {
    const TensorView<const float> d_out_b(d_out.data() + b * d_out.stride(0), Shape{H, K, D},
                                          Shape{D, d_out.stride(1), 1});
    const TensorView<const float> part_bt(part.data() + b * part.stride(0), Shape{H, D, T},
                                          Shape{D, 1, part.stride(1)});
    matmul(d_out_b, part_bt, de, Accumulate::add);
  }
}

// ---- windows of s positions: mean, max, conv --------------------------------------------------

void Compression::window_forward(const BatchGeometry& g, TensorView<const float> part, TensorView<float> out) const {
  const int64_t B = g.B, T = g.T, K = K_, s = s_;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < K; ++j) {
      float* o = &out(b, j, 0);
      const int64_t begin = j * s;
      const int64_t end = std::min<int64_t>(begin + s, kind_ == ProjectionKind::max ? g.lengths[b] : T);
      for (int64_t c = 0; c < C_; ++c) {
        if (kind_ == ProjectionKind::max) {
          float m = begin < end ? -std::numeric_limits<float>::infinity() : 0.0f;
          for (int64_t t = begin; t < end; ++t) m = std::max(m, part(b, t, c));
          o[c] = m;
        } else if (kind_ == ProjectionKind::mean) {
          float sum = 0;
          for (int64_t t = begin; t < end; ++t) sum += part(b, t, c);
          o[c] = sum / static_cast<float>(s);
        } else {
          const float* w = value_.data() + (per_head_ ? (c / D_) * s : 0);
          float sum = 0;
          for (int64_t t = begin; t < end; ++t) sum += w[t - begin] * part(b, t, c);
          o[c] = sum;
        }
      }
    }
}

void Compression::window_backward(const BatchGeometry& g, TensorView<const float> d_out, TensorView<const float> part,
                                  TensorView<float> d_part, Accumulate mode) const {
  const int64_t B = g.B, T = g.T, K = K_, s = s_;
  // d_part: every row of position t gets its window's gradient (max: only the argmax row).
  const bool overwrite = mode == Accumulate::overwrite;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < K; ++j) {
      const int64_t begin = std::min<int64_t>(j * s, T), end = std::min<int64_t>(j * s + s, T);
      if (overwrite)
        for (int64_t t = begin; t < end; ++t) std::memset(&d_part(b, t, 0), 0, sizeof(float) * static_cast<size_t>(C_));
      const int64_t real_end = std::min<int64_t>(end, g.lengths[b]);
      for (int64_t c = 0; c < C_; ++c) {
        const float d = d_out(b, j, c);
        if (kind_ == ProjectionKind::max) {
          if (begin >= real_end) continue;
          int64_t arg = begin;  // the first maximum, as in the forward pass
          for (int64_t t = begin + 1; t < real_end; ++t)
            if (part(b, t, c) > part(b, arg, c)) arg = t;
          d_part(b, arg, c) += d;
        } else if (kind_ == ProjectionKind::mean) {
          for (int64_t t = begin; t < end; ++t) d_part(b, t, c) += d / static_cast<float>(s);
        } else {
          const float* w = value_.data() + (per_head_ ? (c / D_) * s : 0);
          for (int64_t t = begin; t < end; ++t) d_part(b, t, c) += w[t - begin] * d;
        }
      }
    }
  if (kind_ == ProjectionKind::conv && trainable_) conv_filter_backward(g, d_out, part);
}

void Compression::conv_filter_backward(const BatchGeometry& g, TensorView<const float> d_out,
                                       TensorView<const float> part) const {
  // In the forward pass: out[b, j, c] = Σ_r w[r] part[b, js + r, c]. So dw[r] += Σ d_out part.
  const int64_t B = g.B, T = g.T, K = K_, s = s_;
  const int64_t filters = per_head_ ? H_ : 1;
  for (int64_t f = 0; f < filters; ++f)
    for (int64_t r = 0; r < s; ++r) {
      const int64_t c0 = per_head_ ? f * D_ : 0, c1 = per_head_ ? c0 + D_ : C_;
      const double sum = sum_in_thread_order(B * K, [&](int64_t bj) {
        const int64_t b = bj / K, j = bj % K, t = j * s + r;
        double window = 0;
        if (t < T)
          for (int64_t c = c0; c < c1; ++c) window += static_cast<double>(d_out(b, j, c)) * part(b, t, c);
        return window;
      });
      grad_.data()[f * s + r] += static_cast<float>(sum);
    }
}

}  // namespace linformer

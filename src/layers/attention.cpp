#include "linformer/layers/attention.h"

#include "linformer/kernels/dropout.h"
#include "linformer/kernels/reduce.h"
#include "linformer/kernels/softmax.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace linformer {

using config::ProjectionKind;
using config::Sharing;

namespace {
// Zeroes rows t ≥ lengths[b] of a (B, T, C) strided view.
void zero_padding_rows(const BatchGeometry& g, TensorView<float> x) {
  const int64_t C = x.size(2);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < g.B; ++b)
    for (int64_t t = 0; t < g.T; ++t)
      if (t >= g.lengths[b]) std::memset(&x(b, t, 0), 0, sizeof(float) * static_cast<size_t>(C));
}

// x (rows, C) with a row stride: add bias (C) to every row.
void add_bias_rows(float* x, int64_t rows, int64_t C, int64_t row_stride, const float* bias) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) x[r * row_stride + c] += bias[c];
}
}  // namespace

bool compresses_input_first(const ModelSpec& spec) {
  const bool per_head_parameters = spec.sharing == Sharing::none && (spec.projection == ProjectionKind::linear ||
                                                                     spec.projection == ProjectionKind::conv);
  return spec.is_linformer() && spec.projection != ProjectionKind::max && !per_head_parameters;
}

bool shares_compression(const ModelSpec& spec) {
  return spec.sharing == Sharing::kv || spec.sharing == Sharing::layerwise || spec.projection == ProjectionKind::mean;
}

Attention::ProjectionNames Attention::projection_names(const ModelSpec& spec, int layer) {
  const bool learned = spec.projection == ProjectionKind::linear || spec.projection == ProjectionKind::conv;
  if (!spec.is_linformer() || !learned) return {};
  if (spec.sharing == Sharing::layerwise) return {"shared_proj", "shared_proj"};
  const std::string p = "layers." + std::to_string(layer) + ".attn.";
  return {p + "proj_e", spec.sharing == Sharing::kv ? p + "proj_e" : p + "proj_f"};
}

namespace {
// One learned compression of layer `layer`: E (K, n) or a conv filter (s), per head for sharing none.
void declare_projection(ParameterTable& table, const ModelSpec& spec, const std::string& name, int layer) {
  const bool per_head = spec.sharing == Sharing::none;
  const int64_t H = spec.heads;
  if (spec.projection == ProjectionKind::linear) {
    const int64_t K = spec.k_per_layer[layer], n = spec.seq_len;
    table.add(name, per_head ? Shape{H, K, n} : Shape{K, n}, Init::projection, true, !spec.freeze_projection);
  } else {
    const int64_t w = spec.window(layer);
    table.add(name, per_head ? Shape{H, w} : Shape{w}, Init::conv_window, true, !spec.freeze_projection);
  }
}
}  // namespace

void Attention::declare(ParameterTable& table, const ModelSpec& spec, int layer) {
  const std::string p = "layers." + std::to_string(layer) + ".attn.";
  Linear::declare(table, p + "in_proj", 3 * spec.d_model, spec.d_model);
  Linear::declare(table, p + "out_proj", spec.d_model, spec.d_model);
  const ProjectionNames names = projection_names(spec, layer);
  if (names.e.empty() || spec.sharing == Sharing::layerwise) return;
  declare_projection(table, spec, names.e, layer);
  if (names.f != names.e) declare_projection(table, spec, names.f, layer);
}

void Attention::declare_shared(ParameterTable& table, const ModelSpec& spec) {
  const ProjectionNames names = projection_names(spec, 0);
  if (!names.e.empty() && spec.sharing == Sharing::layerwise) declare_projection(table, spec, names.e, 0);
}

double Attention::forward_flops(const ModelSpec& s, int layer, int64_t B, int64_t T, int64_t Tq) {
  const double C = s.d_model, rows = static_cast<double>(B * Tq);  // query rows
  double flops = Linear::forward_flops(rows, C, C);  // out_proj
  if (!s.is_linformer()) return flops + Linear::forward_flops(rows, 3 * C, C) + 2 * (2 * rows * T * C);  // in_proj; Q Kᵀ, P V
  const double K = s.k_per_layer[layer];
  const bool linear = s.projection == ProjectionKind::linear;
  if (compresses_input_first(s)) {
    flops += Linear::forward_flops(rows, C, C) + Linear::forward_flops(B * K, 2 * C, C);  // Q; K̃, Ṽ from x̃
    if (linear) flops += (shares_compression(s) ? 1 : 2) * (2 * B * K * T * C);           // E x (and F x)
  } else {
    flops += Linear::forward_flops(static_cast<double>(B * T), 3 * C, C);  // in_proj
    if (linear) flops += 2 * (2 * B * K * T * C);    // E K, F V (per head: the same total)
  }
  return flops + 2 * (2 * rows * K * C);  // Q K̃ᵀ, P Ṽ
}

Attention::Attention(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_batch)
    : spec_(spec),
      ws_(ws),
      layer_(layer),
      C_(spec.d_model),
      H_(spec.heads),
      D_(spec.head_dim()),
      K_(spec.is_linformer() ? spec.k_per_layer[layer] : 0),
      n_(spec.seq_len),
      linformer_(spec.is_linformer()) {
  const std::string p = "layers." + std::to_string(layer) + ".attn.";
  in_proj_ = Linear(params, p + "in_proj");
  out_proj_ = Linear(params, p + "out_proj");
  const ProjectionNames names = projection_names(spec, layer);
  auto projection = [&](const std::string& name) {
    Projection proj;
    if (!name.empty())
      proj = {params.value(name), params.grad(name), !spec.freeze_projection, params.value_bf16_if_kept(name)};
    return proj;
  };
  proj_e_ = projection(names.e);
  proj_f_ = projection(names.f);
  compress_first_ = compresses_input_first(spec);
  same_compression_ = shares_compression(spec);
  // in_proj runs as one Linear unless the input is compressed first (then its slices run apart).
  const Dim rows = Dim::rows(max_batch * n_);
  if (!compress_first_) in_proj_.reserve_bf16_operands(ws, rows);
  out_proj_.reserve_bf16_operands(ws, rows);
  // Caches (forward fills, backward reads) and backward scratch.
  const Dim B = Dim::batch(max_batch), T = Dim::tokens(n_), S = linformer_ ? Dim(K_) : T;
  const int64_t q_width = compress_first_ ? 1 : 3;
  qkv_ = ws.reserve_cache(layer, compress_first_ ? "attn.q" : "attn.qkv", {B, T, q_width * C_});
  // K̃ and Ṽ in dense blocks, so their projections and the products reading them run on brgemm
  // (oneDNN 2.6 gives a product writing rows of stride 2C to gemm:jit, about 2.5x slower in f32).
  if (linformer_) kv_ = ws.reserve_cache(layer, "attn.kv", {2, B, K_, C_});
  if (compress_first_) {
    xc_e_ = ws.reserve_cache(layer, "attn.xc_e", {B, K_, C_});
    xc_f_ = same_compression_ ? xc_e_ : ws.reserve_cache(layer, "attn.xc_f", {B, K_, C_});
  }
  if (in_proj_.w_bf16.data() != nullptr) {  // in inference too, so the workspace plan counts them
    // Q, K, V (K̃, Ṽ) each in a dense block of its own, not side by side in wider rows: head views
    // of those run the attention's batched products on oneDNN's brgemm kernels, head views of a
    // wider row on its slower gemm:jit (results/2026-11-27_zen4_bf16/).
    if (linformer_) {
      qkv_bf16_ = ws.reserve_cache<bf16>(layer, "attn.q_bf16", {B, T, C_});
      kv_bf16_ = ws.reserve_cache<bf16>(layer, "attn.kv_bf16", {2, B, K_, C_});
    } else {
      qkv_bf16_ = ws.reserve_cache<bf16>(layer, "attn.qkv_bf16", {3, B, T, C_});
    }
    probs_bf16_ = ws.reserve_cache<bf16>(layer, "attn.probs_bf16", {B, H_, T, S});
    d_ctx_bf16_ = ws.reserve_backward<bf16>("attn.d_ctx_bf16", {B, T, C_});
    d_probs_bf16_ = ws.reserve_backward<bf16>("attn.d_probs_bf16", {B, H_, T, S});
    if (compress_first_ && spec.projection == ProjectionKind::linear) {
      x_bf16_ = ws.reserve_cache<bf16>(layer, "attn.x_bf16", {B, T, C_});
      d_xc_bf16_ = ws.reserve_backward<bf16>("attn.d_xc_bf16", {B, K_, C_});
    }
  }
  // bf16 inference keeps the scores in bf16 only (probs_bf16_), so it needs less memory than fp32;
  // so does bf16 training without attention dropout (P and dP only in bf16: probs_bf16_ and
  // d_probs_bf16_), where attention dropout scales both in f32.
  scores_in_bf16_ = ws.inference() && probs_bf16_;
  const bool dropout = spec.attention_dropout > 0 && !ws.inference();
  const bool f32_probs = !probs_bf16_ || dropout;
  if (f32_probs) probs_ = ws.reserve_cache(layer, "attn.probs", {B, H_, T, S});
  if (dropout) probs_dropped_ = ws.reserve_cache(layer, "attn.probs_dropped", {B, H_, T, S});
  ctx_ = ws.reserve_cache(layer, "attn.ctx", {B, T, C_});
  d_ctx_ = ws.reserve_backward("attn.d_ctx", {B, T, C_});
  if (f32_probs) d_probs_ = ws.reserve_backward("attn.d_probs", {B, H_, T, S});
  d_qkv_ = ws.reserve_backward("attn.d_qkv", {B, T, q_width * C_});
  if (linformer_) d_kv_ = ws.reserve_backward("attn.d_kv", {B, K_, 2 * C_});
  if (!ws.inference() && layer == spec.layers - 1) {  // the last layer can compute some rows only
    xq_ = ws.reserve_cache(layer, "attn.xq", {B, T, C_});
    d_xq_ = ws.reserve_backward("attn.d_xq", {B, T, C_});
    // The rounded query rows, gathered from the rounded x (compress-first's cache, in_proj's).
    if (x_bf16_ || (!compress_first_ && in_proj_.keeps_bf16_caches()))
      xq_bf16_ = ws.reserve_cache<bf16>(layer, "attn.xq_bf16", {B, T, C_});
    if (spec.attention_dropout > 0) score_rows_.reserve(static_cast<size_t>(max_batch * H_ * n_));
    if (!compress_first_) {
      q_rows_ = ws.reserve_cache(layer, "attn.q_rows", {B, T, C_});
      d_q_rows_ = ws.reserve_backward("attn.d_q_rows", {B, T, C_});
    }
  }
  if (compress_first_) {
    d_xc_e_ = ws.reserve_backward("attn.d_xc_e", {B, K_, C_});
    d_xc_f_ = same_compression_ ? d_xc_e_ : ws.reserve_backward("attn.d_xc_f", {B, K_, C_});
  }
}

TensorView<float> Attention::qkv_part(TensorView<float> qkv, int which) const {
  // qkv (B, T, 3C): columns [which·C, (which+1)·C).
  return qkv.slice(2, which * C_, (which + 1) * C_);
}

TensorView<float> Attention::kv_part(TensorView<float> kv, int which) const { return kv.select(0, which); }

TensorView<float> Attention::d_kv_part(TensorView<float> d_kv, int which) const {
  // d_kv (B, K, 2C): dK̃ in columns [0, C), dṼ in [C, 2C).
  return d_kv.slice(2, which * C_, (which + 1) * C_);
}

TensorView<float> Attention::flat(TensorView<float> x) {
  // (B, S, C) with row stride s -> (B·S, C) with row stride s (rows of a batch are evenly spaced).
  LF_CHECK(x.stride(0) == x.size(1) * x.stride(1) && x.stride(2) == 1, "flat() of a view with gaps between batches");
  return TensorView<float>(x.data(), Shape{x.size(0) * x.size(1), x.size(2)}, Shape{x.stride(1), 1});
}

TensorView<const float> Attention::w_in(int begin, int end) const { return in_proj_.w.slice(0, begin * C_, end * C_); }
TensorView<float> Attention::dw_in(int begin, int end) const { return in_proj_.dw.slice(0, begin * C_, end * C_); }

TensorView<const float> Attention::masked_input(const BatchGeometry& g, TensorView<const float> x) const {
  bool padded = false;
  for (int64_t b = 0; b < g.B; ++b) padded |= g.lengths[b] < g.T;
  if (!padded) return x;
  const TensorView<float> xm = ws_.view(ctx_, {g.B, g.T});
  std::copy(x.data(), x.data() + x.numel(), xm.data());
  zero_padding_rows(g, xm);
  return xm;
}

bool Attention::runs_bf16() const { return qkv_bf16_ && matmul_bf16_operands(); }

bool Attention::ctx_in_bf16() const { return runs_bf16() && out_proj_.keeps_bf16_caches(); }

bool Attention::caches_x_bf16(const BatchGeometry& g) const {
  if (!x_bf16_ || !runs_bf16()) return false;
  for (int64_t b = 0; b < g.B; ++b)
    if (g.lengths[b] < g.T) return false;  // padded rows: the compressions read x with them zeroed
  return true;
}

TensorView<const bf16> Attention::round_x_into_bf16_cache(const BatchGeometry& g, TensorView<const float> x) const {
  if (!caches_x_bf16(g)) return {};
  return convert_to_bf16(x, ws_.view(x_bf16_, {g.B, g.T}).data());
}

TensorView<bf16> Attention::input_bf16(const BatchGeometry& g) const {
  if (compress_first_) return caches_x_bf16(g) ? ws_.view(x_bf16_, {g.B, g.T}).reshape(Shape{g.rows(), C_}) : TensorView<bf16>{};
  // in_proj runs as one Linear; full attention's writes Q | K | V rounded only when it caches x.
  if (!linformer_ && !(runs_bf16() && in_proj_.keeps_bf16_caches())) return {};
  return in_proj_.input_bf16(g.rows());
}

TensorView<const bf16> Attention::x_bf16_from_cache(const BatchGeometry& g) const {
  if (!caches_x_bf16(g)) return {};
  return ws_.view(x_bf16_, {g.B, g.T});
}

Attention::HeadsBf16 Attention::bf16_heads_from_caches(const Extents& e, const Extents& eq) const {
  auto part = [&](TensorView<const bf16> parts, int which) { return heads(parts.select(0, which)); };
  // (3, B, T, C) for full attention, each part a dense block: Q's first B·Tq rows are its (B, Tq, C).
  if (!linformer_) return {part(ws_.view(qkv_bf16_, eq), 0), part(ws_.view(qkv_bf16_, e), 1), part(ws_.view(qkv_bf16_, e), 2)};
  const TensorView<const bf16> kv = ws_.view(kv_bf16_, e);  // (2, B, K, C)
  return {heads(ws_.view(qkv_bf16_, eq)), part(kv, 0), part(kv, 1)};  // Q (B, Tq, C)
}

TensorView<float> Attention::queries_f32(const Extents& eq, bool rows) const {
  if (rows && !compress_first_) return ws_.view(q_rows_, eq);
  return qkv_part(ws_.view(qkv_, eq), 0);
}

TensorView<float> Attention::queries_gradient(const Extents& eq, bool rows) const {
  if (rows && !compress_first_) return ws_.view(d_q_rows_, eq);
  return qkv_part(ws_.view(d_qkv_, eq), 0);
}

Attention::HeadsBf16 Attention::round_heads_into_bf16_caches(const Extents& e, const Extents& eq, bool rows,
                                                             bool projected_rounded) const {
  // Full attention rounds Q, K and V; Linformer Q (the first C columns of its buffer), K̃ and Ṽ; each
  // part into its dense block (convert_to_bf16 writes a column slice densely).
  if (!projected_rounded) {
    convert_to_bf16(queries_f32(eq, rows), linformer_ ? ws_.view(qkv_bf16_, eq).data() : ws_.view(qkv_bf16_, eq).select(0, 0).data());
    if (!linformer_)
      for (int which = 1; which < 3; ++which)
        convert_to_bf16(qkv_part(ws_.view(qkv_, e), which), ws_.view(qkv_bf16_, e).select(0, which).data());
  }
  if (linformer_) {
    const TensorView<bf16> kv_bf16 = ws_.view(kv_bf16_, e);
    for (int which = 0; which < 2; ++which)
      convert_to_bf16(kv_part(ws_.view(kv_, e), which), kv_bf16.select(0, which).data());
  }
  return bf16_heads_from_caches(e, eq);
}

// ---- Linformer compression ----------------------------------------------------------

void Attention::compress(const BatchGeometry& g, const Projection& p, TensorView<const float> part,
                         TensorView<float> out, TensorView<const bf16> part_bf16) const {
  const int64_t B = g.B, T = g.T, K = K_;
  switch (spec_.projection) {
    case ProjectionKind::linear: {
      if (p.value.rank() == 2) {
        // out_b (K, C) = E[:, :T] (K, T) · part_b (T, C), E broadcast over the batch.
        const TensorView<const float> e(p.value.data(), Shape{1, K, T}, Shape{K * n_, n_, 1});
        if (part_bf16.data() && p.value_bf16.data())
          matmul(TensorView<const bf16>(p.value_bf16.data(), Shape{1, K, T}, Shape{K * n_, n_, 1}), part_bf16, out);
        else if (part_bf16.data())
          matmul(e, part_bf16, out);
        else
          matmul(e, part, out);
      } else {
        // Per head: out_bh (K, D) = E_h[:, :T] (K, T) · part_bh (T, D).
        const TensorView<const float> e(p.value.data(), Shape{1, H_, K, T}, Shape{H_ * K * n_, K * n_, n_, 1});
        const TensorView<const float> part_h(part.data(), Shape{B, H_, T, D_}, Shape{part.stride(0), D_, part.stride(1), 1});
        matmul(e, part_h, heads(out));
      }
      return;
    }
    case ProjectionKind::mean:
    case ProjectionKind::conv:
    case ProjectionKind::max: {
      const int64_t s = n_ / K;
      const ProjectionKind kind = spec_.projection;
      const bool per_head = kind == ProjectionKind::conv && p.value.rank() == 2;
#pragma omp parallel for collapse(2) schedule(static)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < K; ++j) {
          float* o = &out(b, j, 0);
          const int64_t begin = j * s;
          const int64_t end = std::min<int64_t>(begin + s, kind == ProjectionKind::max ? g.lengths[b] : T);
          for (int64_t c = 0; c < C_; ++c) {
            if (kind == ProjectionKind::max) {
              float m = begin < end ? -std::numeric_limits<float>::infinity() : 0.0f;
              for (int64_t t = begin; t < end; ++t) m = std::max(m, part(b, t, c));
              o[c] = m;
            } else if (kind == ProjectionKind::mean) {
              float sum = 0;
              for (int64_t t = begin; t < end; ++t) sum += part(b, t, c);
              o[c] = sum / static_cast<float>(s);
            } else {
              const float* w = p.value.data() + (per_head ? (c / D_) * s : 0);
              float sum = 0;
              for (int64_t t = begin; t < end; ++t) sum += w[t - begin] * part(b, t, c);
              o[c] = sum;
            }
          }
        }
      return;
    }
  }
}

void Attention::compress_backward(const BatchGeometry& g, const Projection& p, TensorView<const float> d_out,
                                  TensorView<const float> part, TensorView<float> d_part, Accumulate mode,
                                  TensorView<const bf16> part_bf16) const {
  const int64_t B = g.B, T = g.T, K = K_;
  switch (spec_.projection) {
    case ProjectionKind::linear: {
      if (p.value.rank() == 2) {
        // In the forward pass: out_b = E[:, :T] part_b. So d_part_b = E[:, :T]ᵀ d_out_b and
        // dE[:, :T] += Σ_b d_out_b part_bᵀ.
        const TensorView<const float> et(p.value.data(), Shape{1, T, K}, Shape{K * n_, 1, n_});
        const TensorView<float> de(p.grad.data(), Shape{K, T}, Shape{n_, 1});
        if (part_bf16.data() && p.value_bf16.data()) {  // bf16 path: d_out rounded once for all B + 1 products
          const TensorView<const bf16> d_out_bf16 = convert_to_bf16(d_out, ws_.view(d_xc_bf16_, Extents{B, T}).data());
          matmul(TensorView<const bf16>(p.value_bf16.data(), Shape{1, T, K}, Shape{K * n_, 1, n_}), d_out_bf16, d_part, mode);
          if (p.trainable)
            for (int64_t b = 0; b < B; ++b)
              matmul(d_out_bf16.select(0, b), part_bf16.select(0, b).transpose(0, 1), de, Accumulate::add);
          break;
        }
        matmul(et, d_out, d_part, mode);
        if (p.trainable) {
          for (int64_t b = 0; b < B; ++b) {
            if (part_bf16.data()) matmul(d_out.select(0, b), part_bf16.select(0, b).transpose(0, 1), de, Accumulate::add);
            else matmul(d_out.select(0, b), part.select(0, b).transpose(0, 1), de, Accumulate::add);
          }
        }
      } else {
        // Per head: d_part_bh = E_h[:, :T]ᵀ d_out_bh; dE_h[:, :T] += Σ_b d_out_bh part_bhᵀ.
        const TensorView<const float> et(p.value.data(), Shape{1, H_, T, K}, Shape{H_ * K * n_, K * n_, 1, n_});
        const TensorView<const float> d_out_h(d_out.data(), Shape{B, H_, K, D_}, Shape{d_out.stride(0), D_, d_out.stride(1), 1});
        const TensorView<float> d_part_h(d_part.data(), Shape{B, H_, T, D_}, Shape{d_part.stride(0), D_, d_part.stride(1), 1});
        matmul(et, d_out_h, d_part_h, mode);
        if (p.trainable) {
          const TensorView<float> de(p.grad.data(), Shape{H_, K, T}, Shape{K * n_, n_, 1});
          for (int64_t b = 0; b < B; ++b) {
            const TensorView<const float> d_out_b(d_out.data() + b * d_out.stride(0), Shape{H_, K, D_}, Shape{D_, d_out.stride(1), 1});
            const TensorView<const float> part_bt(part.data() + b * part.stride(0), Shape{H_, D_, T}, Shape{D_, 1, part.stride(1)});
            matmul(d_out_b, part_bt, de, Accumulate::add);
          }
        }
      }
      break;
    }
    case ProjectionKind::mean:
    case ProjectionKind::conv:
    case ProjectionKind::max: {
      const int64_t s = n_ / K;
      const ProjectionKind kind = spec_.projection;
      const bool per_head = kind == ProjectionKind::conv && p.value.rank() == 2;
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
            if (kind == ProjectionKind::max) {
              if (begin >= real_end) continue;
              int64_t arg = begin;  // the first maximum, as in the forward pass
              for (int64_t t = begin + 1; t < real_end; ++t)
                if (part(b, t, c) > part(b, arg, c)) arg = t;
              d_part(b, arg, c) += d;
            } else if (kind == ProjectionKind::mean) {
              for (int64_t t = begin; t < end; ++t) d_part(b, t, c) += d / static_cast<float>(s);
            } else {
              const float* w = p.value.data() + (per_head ? (c / D_) * s : 0);
              for (int64_t t = begin; t < end; ++t) d_part(b, t, c) += w[t - begin] * d;
            }
          }
        }
      if (kind == ProjectionKind::conv && p.trainable) {
        // In the forward pass: out[b, j, c] = Σ_r w[r] part[b, js + r, c]. So dw[r] += Σ d_out part.
        const int64_t filters = per_head ? H_ : 1;
        for (int64_t f = 0; f < filters; ++f)
          for (int64_t r = 0; r < s; ++r) {
            const int64_t c0 = per_head ? f * D_ : 0, c1 = per_head ? c0 + D_ : C_;
            const double sum = sum_in_thread_order(B * K, [&](int64_t bj) {
              const int64_t b = bj / K, j = bj % K, t = j * s + r;
              double window = 0;
              if (t < T)
                for (int64_t c = c0; c < c1; ++c) window += static_cast<double>(d_out(b, j, c)) * part(b, t, c);
              return window;
            });
            p.grad.data()[f * s + r] += static_cast<float>(sum);
          }
      }
      break;
    }
  }
  zero_padding_rows(g, d_part);  // the forward pass zeroed these rows before compressing
}

// ---- forward and backward ---------------------------------------------------------------

TensorView<const float> Attention::gather_query_rows(const QueryRows& rows, int64_t B, TensorView<const float> x) const {
  LF_CHECK(x.is_contiguous(), "attention layer {}: query rows of a strided input", layer_);
  const TensorView<float> xq = ws_.view(xq_, {B, rows.Tq}).reshape(Shape{B * rows.Tq, C_});
  gather_rows(x.data(), rows.source, xq.data(), B * rows.Tq, C_);
  return xq;
}

TensorView<const bf16> Attention::gather_query_rows(const QueryRows& rows, int64_t B, TensorView<const bf16> x_bf16) const {
  const TensorView<bf16> xq_bf16 = ws_.view(xq_bf16_, {B, rows.Tq}).reshape(Shape{B * rows.Tq, C_});
  gather_rows(x_bf16.data(), rows.source, xq_bf16.data(), B * rows.Tq, C_);
  return xq_bf16;
}

bool Attention::project_in_parts(const BatchGeometry& g, const QueryRows& rows, TensorView<const float> x,
                                 bool x_rounded, bool kv_bias) {
  const int64_t B = g.B, T = g.T, Tq = rows.Tq;
  const Extents e{B, T}, eq{B, Tq};
  const auto x2 = x.reshape(Shape{B * T, C_});
  const float* b_in = in_proj_.b.data();
  const TensorView<const float> xq = gather_query_rows(rows, B, x);
  const TensorView<float> qkv = ws_.view(qkv_, e).reshape(Shape{B * T, 3 * C_});
  const TensorView<bf16> x_bf16 = in_proj_.input_bf16(B * T);  // (B·T, C): in_proj's input cache, or empty
  if (!x_rounded && !(x_bf16.data() && x2.is_contiguous())) {  // f32 operands (rounded in each matmul on the bf16 path)
    matmul(x2, w_in(1, 3).transpose(0, 1), qkv.slice(1, C_, 3 * C_), Accumulate::overwrite, kv_bias ? b_in + C_ : nullptr);
    matmul(xq, w_in(0, 1).transpose(0, 1), ws_.view(q_rows_, eq).reshape(Shape{B * Tq, C_}), Accumulate::overwrite,
           b_in);
    return false;
  }
  // bf16 operands: x rounded once into in_proj's cache (by its maker when x_rounded), its rows gathered.
  if (!x_rounded) convert_to_bf16(x2, x_bf16.data());
  const TensorView<const bf16> xq_bf16 = gather_query_rows(rows, B, TensorView<const bf16>(x_bf16));
  const TensorView<const bf16> w = in_proj_.w_bf16;
  if (!linformer_ && runs_bf16()) {  // straight into the dense Q, K, V blocks of the bf16 cache
    for (int which = 1; which < 3; ++which)
      matmul(TensorView<const bf16>(x_bf16), w.slice(0, which * C_, (which + 1) * C_).transpose(0, 1),
             ws_.view(qkv_bf16_, e).select(0, which).reshape(Shape{B * T, C_}), b_in + which * C_);
    matmul(TensorView<const bf16>(xq_bf16), w.slice(0, 0, C_).transpose(0, 1),
           ws_.view(qkv_bf16_, eq).select(0, 0).reshape(Shape{B * Tq, C_}), b_in);
    return true;
  }
  // Linformer projecting first: K and V in f32 for their compression, Q in f32 (rounded with K̃, Ṽ).
  matmul(TensorView<const bf16>(x_bf16), w.slice(0, C_, 3 * C_).transpose(0, 1), qkv.slice(1, C_, 3 * C_),
         Accumulate::overwrite, kv_bias ? b_in + C_ : nullptr);
  matmul(TensorView<const bf16>(xq_bf16), w.slice(0, 0, C_).transpose(0, 1),
         ws_.view(q_rows_, eq).reshape(Shape{B * Tq, C_}), Accumulate::overwrite, b_in);
  return false;
}

void Attention::backward_in_parts(const BatchGeometry& g, const QueryRows& rows, TensorView<const float> x,
                                  TensorView<float> d_qkv, TensorView<float> dx, bool kv_bias) {
  const int64_t B = g.B, T = g.T, Tq = rows.Tq;
  const Extents eq{B, Tq};
  const auto x2 = x.reshape(Shape{B * T, C_});
  const auto dx2 = dx.reshape(Shape{B * T, C_});
  float* db_in = in_proj_.db.data();
  const TensorView<float> d_kv2 = d_qkv.reshape(Shape{B * T, 3 * C_}).slice(1, C_, 3 * C_);  // (B·T, 2C)
  const TensorView<float> dxq2 = ws_.view(d_xq_, eq).reshape(Shape{B * Tq, C_});
  if (kv_bias) add_column_sums(d_kv2.data(), B * T, 2 * C_, 3 * C_, db_in + C_);
  const TensorView<const bf16> x_bf16 = in_proj_.input_bf16(B * T);  // (B·T, C), forward's rounding
  const bool rounded = x_bf16.data() && x2.is_contiguous();
  if (rounded) {  // dKV rounded once for its two products
    const TensorView<const bf16> d_kv_bf16 = convert_to_bf16(d_kv2, in_proj_.output_gradient_bf16(B * T).data());
    matmul(d_kv_bf16.transpose(0, 1), x_bf16, dw_in(1, 3), Accumulate::add);
    matmul(d_kv_bf16, in_proj_.w_bf16.slice(0, C_, 3 * C_), dx2);
  } else {
    matmul(d_kv2.transpose(0, 1), x2, dw_in(1, 3), Accumulate::add);
    matmul(d_kv2, w_in(1, 3), dx2);
  }
  backward_queries(eq, queries_gradient(eq, true), ws_.view(xq_, eq), rounded ? ws_.view(xq_bf16_, eq) : TensorView<bf16>{},
                   dxq2);
  scatter_add_rows(dxq2.data(), rows.source, dx2.data(), B * Tq, C_);
}

void Attention::backward_queries(const Extents& eq, TensorView<const float> d_q, TensorView<const float> xq,
                                 TensorView<const bf16> xq_bf16, TensorView<float> dxq) const {
  const int64_t rows = eq.B * eq.T;
  const TensorView<const float> d_q2 = d_q.reshape(Shape{rows, C_});
  add_column_sums(d_q2.data(), rows, C_, d_q2.stride(0), in_proj_.db.data());
  if (xq_bf16.data()) {  // dQ rounded once for both products, into d_ctx's bf16 scratch (done with)
    const TensorView<const bf16> d_q_bf16 = convert_to_bf16(d_q2, ws_.view(d_ctx_bf16_, eq).data());
    matmul(d_q_bf16.transpose(0, 1), xq_bf16.reshape(Shape{rows, C_}), dw_in(0, 1), Accumulate::add);
    matmul(d_q_bf16, in_proj_.w_bf16.slice(0, 0, C_), dxq);
  } else {
    matmul(d_q2.transpose(0, 1), xq.reshape(Shape{rows, C_}), dw_in(0, 1), Accumulate::add);
    matmul(d_q2, w_in(0, 1), dxq);
  }
}

const int32_t* Attention::score_rows(const BatchGeometry& g, const QueryRows* rows) {
  if (!rows) return nullptr;
  const int64_t Tq = rows->Tq;
  LF_CHECK(score_rows_.capacity() >= static_cast<size_t>(g.B * H_ * Tq), "attention layer {}: no room for {} score rows",
           layer_, g.B * H_ * Tq);
  score_rows_.resize(static_cast<size_t>(g.B * H_ * Tq));  // within the reserved capacity: no allocation
  for (int64_t b = 0; b < g.B; ++b)
    for (int64_t h = 0; h < H_; ++h)
      for (int64_t j = 0; j < Tq; ++j)
        score_rows_[static_cast<size_t>((b * H_ + h) * Tq + j)] =
            static_cast<int32_t>((b * H_ + h) * g.T + (rows->source[b * Tq + j] - b * g.T));
  return score_rows_.data();
}

void Attention::forward(const BatchGeometry& g, TensorView<const float> x, TensorView<float> y,
                        const uint8_t* key_valid, const Pass& pass, bool x_rounded, const QueryRows* rows) {
  LF_CHECK(!x_rounded || input_bf16(g).data() != nullptr,
           "attention layer {}: given a rounded input without a bf16 input cache", layer_);
  LF_CHECK(!rows || selects_queries(), "attention layer {}: query rows on a layer that computes every row", layer_);
  const int64_t B = g.B, T = g.T, S = linformer_ ? K_ : T;
  const int64_t Tq = rows ? rows->Tq : T;  // query rows per sequence
  const Extents e{B, T}, eq{B, Tq};
  const float scale = 1.0f / std::sqrt(static_cast<float>(D_));
  const TensorView<float> ctx = ws_.view(ctx_, eq);
  const auto x2 = x.reshape(Shape{B * T, C_});
  const float* b_in = in_proj_.b.data();

  TensorView<float> queries, keys, values;  // per head (B, H, T or S, D)
  // On the bf16 path of training, Q (and full attention's K and V) feed only bf16 products: their
  // projection then writes them rounded into their bf16 cache, never in f32.
  bool projected_rounded = false;
  if (!linformer_ && rows) {
    const TensorView<float> qkv = ws_.view(qkv_, e);  // (B, T, 3C): K and V parts used
    projected_rounded = project_in_parts(g, *rows, x, x_rounded, /*kv_bias=*/true);
    queries = heads(queries_f32(eq, true));
    keys = heads(qkv_part(qkv, 1));
    values = heads(qkv_part(qkv, 2));
  } else if (!linformer_) {
    const TensorView<float> qkv = ws_.view(qkv_, e);  // (B, T, 3C)
    projected_rounded = x_rounded || (runs_bf16() && in_proj_.keeps_bf16_caches() && x2.is_contiguous());
    const auto qkv_bf16 = [&] { return ws_.view(qkv_bf16_, e).reshape(Shape{3, B * T, C_}); };  // Q, K, V blocks
    if (x_rounded)
      in_proj_.forward_rounded(qkv_bf16());
    else if (projected_rounded)
      in_proj_.forward(x2, qkv_bf16());
    else
      in_proj_.forward(x2, qkv.reshape(Shape{B * T, 3 * C_}));
    queries = heads(qkv_part(qkv, 0));
    keys = heads(qkv_part(qkv, 1));
    values = heads(qkv_part(qkv, 2));
  } else {
    const TensorView<float> kv = ws_.view(kv_, e);  // (2, B, K, C): K̃, Ṽ
    if (compress_first_) {
      // Q = x W_Qᵀ + b_Q; x̃ = P(real ⊙ x) (B, K, C); K̃ = x̃_E W_Kᵀ + b_K, Ṽ = x̃_F W_Vᵀ + b_V.
      const TensorView<float> q = ws_.view(qkv_, eq);
      const TensorView<const bf16> x_bf16 =  // (B, T, C) or empty
          x_rounded ? x_bf16_from_cache(g) : round_x_into_bf16_cache(g, x);
      projected_rounded = x_bf16.data() != nullptr;
      // The queries' input (B·Tq, C): x, or its query rows (and their rounding) gathered.
      const TensorView<const float> xq2 = rows ? gather_query_rows(*rows, B, x) : x2;
      TensorView<const bf16> xq_bf16 = x_bf16.data() ? x_bf16.reshape(Shape{B * T, C_}) : TensorView<const bf16>{};
      if (rows && x_bf16.data()) xq_bf16 = gather_query_rows(*rows, B, x_bf16);
      if (projected_rounded)
        matmul(xq_bf16, in_proj_.w_bf16.slice(0, 0, C_).transpose(0, 1),
               ws_.view(qkv_bf16_, eq).reshape(Shape{B * Tq, C_}), b_in);
      else
        matmul(xq2, w_in(0, 1).transpose(0, 1), q.reshape(Shape{B * Tq, C_}), Accumulate::overwrite, b_in);
      const TensorView<float> xc_e = ws_.view(xc_e_, e), xc_f = ws_.view(xc_f_, e);
      const TensorView<const float> xm = masked_input(g, x);
      compress(g, proj_e_, xm, xc_e, x_bf16);
      if (!same_compression_) compress(g, proj_f_, xm, xc_f, x_bf16);  // else xc_f is xc_e
      matmul(flat(xc_e), w_in(1, 2).transpose(0, 1), flat(kv_part(kv, 0)), Accumulate::overwrite, b_in + C_);
      matmul(flat(xc_f), w_in(2, 3).transpose(0, 1), flat(kv_part(kv, 1)), Accumulate::overwrite, b_in + 2 * C_);
      queries = heads(q);
    } else {
      // Project without bias; Q gets its bias now, K and V after compression.
      const TensorView<float> qkv = ws_.view(qkv_, e);
      if (rows)
        project_in_parts(g, *rows, x, x_rounded, /*kv_bias=*/false);  // Q in its own cache, with its bias
      else if (x_rounded)
        in_proj_.forward_rounded(qkv.reshape(Shape{B * T, 3 * C_}), /*with_bias=*/false);
      else
        in_proj_.forward(x2, qkv.reshape(Shape{B * T, 3 * C_}), /*with_bias=*/false);
      if (!rows) add_bias_rows(qkv.data(), B * T, C_, 3 * C_, b_in);
      zero_padding_rows(g, qkv_part(qkv, 1));
      zero_padding_rows(g, qkv_part(qkv, 2));
      compress(g, proj_e_, qkv_part(qkv, 1), kv_part(kv, 0));
      compress(g, proj_f_, qkv_part(qkv, 2), kv_part(kv, 1));
      for (int which = 0; which < 2; ++which)
        add_bias_rows(kv_part(kv, which).data(), B * K_, C_, C_, b_in + (1 + which) * C_);
      queries = heads(queries_f32(eq, rows != nullptr));
    }
    keys = heads(kv_part(kv, 0));
    values = heads(kv_part(kv, 1));
  }

  // scores (B, H, T, S) = Q_h K_hᵀ, then softmax(scale · scores) over real keys.
  const bool rounds_bf16 = runs_bf16();
  const uint8_t* mask = linformer_ ? nullptr : key_valid;
  if (scores_in_bf16_) {  // inference: the scores in bf16, their softmax in place, then P V
    LF_CHECK(rounds_bf16, "attention layer {}: built for bf16 inference, run with f32 matmuls", layer_);
    const HeadsBf16 rounded = round_heads_into_bf16_caches(e, eq, rows != nullptr, projected_rounded);
    const TensorView<bf16> probs_bf16 = scores_view(probs_bf16_, e, Tq);
    matmul(rounded.queries, rounded.keys.transpose(2, 3), probs_bf16);
    softmax_forward_bf16_in_place(probs_bf16.data(), B * H_ * Tq, S, scale, mask, H_ * Tq);
    matmul(TensorView<const bf16>(probs_bf16), rounded.values, heads(ctx));
    out_proj_.forward(ctx.reshape(Shape{B * Tq, C_}), y.reshape(Shape{B * Tq, C_}));
    return;
  }
  // With bf16 operands the scores are a bf16 result (as in PyTorch's autocast): the bf16 path writes
  // them into the probabilities' bf16 cache, where the softmax (f32 arithmetic) overwrites them with
  // P's rounding, the P·V operand without dropout and what the backward reads: P is not kept in f32
  // (n × n floats: the memory, not the speed, is what that saves; results/2026-11-26_zen5_bf16_probs).
  // With dropout the rounding goes to the f32 cache, which dropout scales.
  const TensorView<float> probs = probs_ ? scores_view(probs_, e, Tq) : TensorView<float>{};  // none: P in bf16 only
  const bool dropped = pass.training && spec_.attention_dropout > 0;
  LF_CHECK(rounds_bf16 || probs_, "attention layer {}: built for bf16 training, run with f32 matmuls", layer_);
  HeadsBf16 rounded;
  if (rounds_bf16) {
    rounded = round_heads_into_bf16_caches(e, eq, rows != nullptr, projected_rounded);
    const TensorView<bf16> scores = scores_view(probs_bf16_, e, Tq);
    matmul(rounded.queries, rounded.keys.transpose(2, 3), scores);
    softmax_forward_bf16_scores(scores.data(), dropped ? probs.data() : nullptr, dropped ? nullptr : scores.data(),
                                B * H_ * Tq, S, scale, mask, H_ * Tq);
  } else {
    matmul(queries, keys.transpose(2, 3), probs);
    if (matmul_bf16_operands()) round_to_bf16_values(probs.data(), probs.numel());  // the bf16 path's numbers
    softmax_forward(probs.data(), probs.data(), B * H_ * Tq, S, scale, mask, H_ * Tq);
    if (matmul_bf16_operands()) round_to_bf16_values(probs.data(), probs.numel());  // P as the bf16 path keeps it
  }
  const TensorView<bf16> probs_bf16 = rounds_bf16 ? scores_view(probs_bf16_, e, Tq) : TensorView<bf16>{};

  TensorView<float> used = probs;
  if (dropped) {
    used = scores_view(probs_dropped_, e, Tq);
    dropout_apply_rows(probs.data(), used.data(), B * H_ * Tq, S, score_rows(g, rows), spec_.attention_dropout,
                       pass.seed, dropout_stream(DropoutSite::attention_probs, layer_, pass));
  }
  // ctx_h (B, H, T, D) = P_h V_h
  if (ctx_in_bf16()) {  // written rounded, straight into out_proj's input cache (no f32 ctx)
    const TensorView<bf16> ctx_bf16 = out_proj_.input_bf16(B * Tq).reshape(Shape{B, Tq, C_});
    matmul(dropped ? convert_to_bf16(used, probs_bf16.data()) : TensorView<const bf16>(probs_bf16), rounded.values,
           heads(ctx_bf16));
    out_proj_.forward_rounded(y.reshape(Shape{B * Tq, C_}));
    return;
  }
  if (rounds_bf16)
    matmul(dropped ? convert_to_bf16(used, probs_bf16.data()) : TensorView<const bf16>(probs_bf16), rounded.values,
           heads(ctx));
  else
    matmul(used, values, heads(ctx));
  out_proj_.forward(ctx.reshape(Shape{B * Tq, C_}), y.reshape(Shape{B * Tq, C_}));
}

void Attention::backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const float> dy,
                         TensorView<float> dx, const Pass& pass, const QueryRows* rows) {
  LF_CHECK(!rows || selects_queries(), "attention layer {}: query rows on a layer that computes every row", layer_);
  const int64_t B = g.B, T = g.T, S = linformer_ ? K_ : T;
  const int64_t Tq = rows ? rows->Tq : T;  // query rows per sequence
  const Extents e{B, T}, eq{B, Tq};
  const float scale = 1.0f / std::sqrt(static_cast<float>(D_));
  const TensorView<float> probs = probs_ ? scores_view(probs_, e, Tq) : TensorView<float>{};  // none: P in bf16 only
  const TensorView<float> ctx = ws_.view(ctx_, eq);
  const TensorView<float> d_ctx = ws_.view(d_ctx_, eq);
  const TensorView<float> d_probs = d_probs_ ? scores_view(d_probs_, e, Tq) : TensorView<float>{};
  const bool dropped = pass.training && spec_.attention_dropout > 0;
  const TensorView<float> used = dropped ? scores_view(probs_dropped_, e, Tq) : probs;
  const auto x2 = x.reshape(Shape{B * T, C_});
  const auto dx2 = dx.reshape(Shape{B * T, C_});
  float* db_in = in_proj_.db.data();

  // In the forward pass: y = ctx W_oᵀ + b_o. On the bf16 path d_ctx is written only rounded
  // (both products that read it take bf16 operands).
  const TensorView<bf16> d_ctx_bf16 = ctx_in_bf16() ? ws_.view(d_ctx_bf16_, eq) : TensorView<bf16>{};  // (B, Tq, C)
  if (d_ctx_bf16.data()) {
    const auto dy2 = dy.reshape(Shape{B * Tq, C_});
    convert_to_bf16(dy2, out_proj_.output_gradient_bf16(B * Tq).data());
    out_proj_.backward_rounded(dy2, d_ctx_bf16.reshape(Shape{B * Tq, C_}));
  } else {
    out_proj_.backward(dy.reshape(Shape{B * Tq, C_}), ctx.reshape(Shape{B * Tq, C_}), d_ctx.reshape(Shape{B * Tq, C_}));
  }

  // Q, K, V (as the forward pass used them) and their gradients' buffers, per head. Compress-first
  // Linformer's qkv buffers hold Q only (B·Tq rows), the others' K and V too (B·T rows).
  const Extents e_qkv = compress_first_ ? eq : e;
  const TensorView<float> qkv = ws_.view(qkv_, e_qkv);
  const TensorView<float> d_qkv = ws_.view(d_qkv_, e_qkv);
  TensorView<float> keys, values, d_keys, d_values, kv, d_kv;
  if (!linformer_) {
    keys = heads(qkv_part(qkv, 1));
    values = heads(qkv_part(qkv, 2));
    d_keys = heads(qkv_part(d_qkv, 1));
    d_values = heads(qkv_part(d_qkv, 2));
  } else {
    kv = ws_.view(kv_, e);
    d_kv = ws_.view(d_kv_, e);
    keys = heads(kv_part(kv, 0));
    values = heads(kv_part(kv, 1));
    d_keys = heads(d_kv_part(d_kv, 0));
    d_values = heads(d_kv_part(d_kv, 1));
  }
  const TensorView<float> d_ctx_h = heads(d_ctx);

  // In the forward pass: ctx_h = P_used V_h. So dP_used = d_ctx_h V_hᵀ, dV_h = P_usedᵀ d_ctx_h.
  // P = softmax(scale · Q Kᵀ): d_scores = scale · P ⊙ (dP - Σ dP P).
  // scores = Q_h K_hᵀ: dQ_h = d_scores K_h, dK_h = d_scoresᵀ Q_h.
  // With bf16 operands dP is a bf16 result, like the scores; d_scores feeds only bf16 products.
  const bool rounds_bf16 = runs_bf16();
  const auto dropout_on_gradient = [&] {  // P_used = dropout(P): the same mask on the gradient
    dropout_apply_rows(d_probs.data(), d_probs.data(), B * H_ * Tq, S, rows ? score_rows_.data() : nullptr,
                       spec_.attention_dropout, pass.seed, dropout_stream(DropoutSite::attention_probs, layer_, pass));
  };
  if (rounds_bf16) {
    const HeadsBf16 rounded = bf16_heads_from_caches(e, eq);
    const TensorView<const bf16> used_bf16 = scores_view(probs_bf16_, e, Tq);
    const TensorView<const bf16> d_ctx_h =
        heads(d_ctx_bf16.data() ? TensorView<const bf16>(d_ctx_bf16) : convert_to_bf16(d_ctx, ws_.view(d_ctx_bf16_, eq).data()));
    const TensorView<bf16> d_scores = scores_view(d_probs_bf16_, e, Tq);
    if (!dropped) {  // dP in bf16, turned into d_scores in place
      matmul(d_ctx_h, rounded.values.transpose(2, 3), d_scores);
      softmax_backward_bf16_gradient(d_scores.data(), used_bf16.data(), d_scores.data(), B * H_ * Tq, S, scale);
    } else {
      matmul(d_ctx_h, rounded.values.transpose(2, 3), d_probs);
      round_to_bf16_values(d_probs.data(), d_probs.numel());
      dropout_on_gradient();
      softmax_backward_bf16(d_probs.data(), probs.data(), d_scores.data(), B * H_ * Tq, S, scale);
    }
    matmul(used_bf16.transpose(2, 3), d_ctx_h, d_values);
    matmul(TensorView<const bf16>(d_scores), rounded.keys, heads(queries_gradient(eq, rows != nullptr)));
    matmul(TensorView<const bf16>(d_scores).transpose(2, 3), rounded.queries, d_keys);
  } else {
    matmul(d_ctx_h, values.transpose(2, 3), d_probs);
    if (matmul_bf16_operands()) round_to_bf16_values(d_probs.data(), d_probs.numel());  // the bf16 path's numbers
    matmul(used.transpose(2, 3), d_ctx_h, d_values);
    if (dropped) dropout_on_gradient();
    softmax_backward(d_probs.data(), probs.data(), d_probs.data(), B * H_ * Tq, S, scale);
    matmul(d_probs, keys, heads(queries_gradient(eq, rows != nullptr)));
    matmul(d_probs.transpose(2, 3), heads(queries_f32(eq, rows != nullptr)), d_keys);
  }

  if (!linformer_ && rows) {
    backward_in_parts(g, *rows, x, d_qkv, dx, /*kv_bias=*/true);
    return;
  }
  if (!linformer_) {
    in_proj_.backward(d_qkv.reshape(Shape{B * T, 3 * C_}), x2, dx2);
    return;
  }
  // K̃ and Ṽ got their biases after compression.
  add_column_sums(d_kv.data(), B * K_, 2 * C_, 2 * C_, db_in + C_);
  if (!compress_first_) {
    // In the forward pass: K̃ = P_E(real ⊙ K part), Ṽ = P_F(real ⊙ V part) (+ bias).
    compress_backward(g, proj_e_, d_kv_part(d_kv, 0), qkv_part(qkv, 1), qkv_part(d_qkv, 1), Accumulate::overwrite);
    compress_backward(g, proj_f_, d_kv_part(d_kv, 1), qkv_part(qkv, 2), qkv_part(d_qkv, 2), Accumulate::overwrite);
    if (rows) {  // K̃'s and Ṽ's biases done above
      backward_in_parts(g, *rows, x, d_qkv, dx, /*kv_bias=*/false);
      return;
    }
    add_column_sums(d_qkv.data(), B * T, C_, 3 * C_, db_in);  // Q bias
    in_proj_.backward(d_qkv.reshape(Shape{B * T, 3 * C_}), x2, dx2, Accumulate::overwrite, /*with_bias=*/false);
    return;
  }
  // In the forward pass: K̃ = x̃_E W_Kᵀ + b_K, Ṽ = x̃_F W_Vᵀ + b_V. So dW_K += dK̃ᵀ x̃_E,
  // dx̃_E = dK̃ W_K (and the same for V; one matmul each when x̃_E is x̃_F).
  const TensorView<float> xc_e = ws_.view(xc_e_, e), xc_f = ws_.view(xc_f_, e);
  const TensorView<float> d_xc_e = ws_.view(d_xc_e_, e), d_xc_f = ws_.view(d_xc_f_, e);
  if (same_compression_) {
    matmul(flat(d_kv).transpose(0, 1), flat(xc_e), dw_in(1, 3), Accumulate::add);
    matmul(flat(d_kv), w_in(1, 3), flat(d_xc_e));
  } else {
    matmul(flat(d_kv_part(d_kv, 0)).transpose(0, 1), flat(xc_e), dw_in(1, 2), Accumulate::add);
    matmul(flat(d_kv_part(d_kv, 1)).transpose(0, 1), flat(xc_f), dw_in(2, 3), Accumulate::add);
    matmul(flat(d_kv_part(d_kv, 0)), w_in(1, 2), flat(d_xc_e));
    matmul(flat(d_kv_part(d_kv, 1)), w_in(2, 3), flat(d_xc_f));
  }
  // Q = x_q W_Qᵀ + b_Q: dW_Q += dQᵀ x_q, db_Q += Σ dQ, dx_q = dQ W_Q, where x_q is x or its query
  // rows (then dx_q goes to its own scratch, scattered into dx at the end).
  const TensorView<const bf16> x_bf16 = x_bf16_from_cache(g);  // (B, T, C) or empty
  const TensorView<float> dxq2 = rows ? ws_.view(d_xq_, eq).reshape(Shape{B * Tq, C_}) : dx2;
  if (rows)
    backward_queries(eq, d_qkv, ws_.view(xq_, eq), x_bf16.data() ? ws_.view(xq_bf16_, eq) : TensorView<bf16>{}, dxq2);
  else
    backward_queries(eq, d_qkv, x, x_bf16, dxq2);
  // x̃ = P(real ⊙ x): d(real ⊙ x) = Pᵀ dx̃, padded rows zero; into d_ctx's buffer (done with), or
  // with query rows straight into dx, which dx_q's rows then add to.
  const TensorView<const float> xm = masked_input(g, x);
  const TensorView<float> d_xm = rows ? dx : ws_.view(d_ctx_, e);
  compress_backward(g, proj_e_, d_xc_e, xm, d_xm, Accumulate::overwrite, x_bf16);
  if (!same_compression_) compress_backward(g, proj_f_, d_xc_f, xm, d_xm, Accumulate::add, x_bf16);
  if (rows) scatter_add_rows(dxq2.data(), rows->source, dx2.data(), B * Tq, C_);
  else add_into(dx2.data(), d_xm.data(), dx2.numel());
}

}  // namespace linformer

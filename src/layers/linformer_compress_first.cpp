#include "linformer/layers/linformer_attention.h"

#include "linformer/kernels/reduce.h"

#include <algorithm>

namespace linformer {

using config::ProjectionKind;

LinformerCompressFirst::LinformerCompressFirst(const ModelSpec& spec, const Parameters& params, Workspace& ws,
                                               int layer, int64_t max_batch)
    : LinformerAttention(spec, params, ws, layer, max_batch, /*compress_first=*/true),
      same_compression_(shares_compression(spec)) {
  const Dim B = Dim::batch(max_batch), T = Dim::tokens(spec.seq_len);
  cache_.q = ws.reserve_cache(layer, "attn.q", {B, T, C_});
  cache_.xc_e = ws.reserve_cache(layer, "attn.xc_e", {B, K_, C_});
  cache_.xc_f = same_compression_ ? cache_.xc_e : ws.reserve_cache(layer, "attn.xc_f", {B, K_, C_});
  if (in_proj_.linear.w_bf16.data() != nullptr && spec.projection == ProjectionKind::linear)
    cache_.x_bf16 = ws.reserve_cache<bf16>(layer, "attn.x_bf16", {B, T, C_});
  scratch_.d_q = ws.reserve_backward("attn.d_qkv", {B, T, C_});
  scratch_.d_xc_e = ws.reserve_backward("attn.d_xc_e", {B, K_, C_});
  scratch_.d_xc_f = same_compression_ ? scratch_.d_xc_e : ws.reserve_backward("attn.d_xc_f", {B, K_, C_});
}

bool LinformerCompressFirst::caches_x_bf16(const BatchGeometry& g) const {
  if (!cache_.x_bf16 || !core_.runs_bf16()) return false;
  for (int64_t b = 0; b < g.B; ++b)
    if (g.lengths[b] < g.T) return false;  // padded rows: the compressions read x with them zeroed
  return true;
}

TensorView<const bf16> LinformerCompressFirst::round_x_into_bf16_cache(const BatchGeometry& g,
                                                                       TensorView<const float> x) const {
  if (!caches_x_bf16(g)) return {};
  return convert_to_bf16(x, ws_.view(cache_.x_bf16, {g.B, g.T}).data());
}

TensorView<const bf16> LinformerCompressFirst::x_bf16_from_cache(const BatchGeometry& g) const {
  if (!caches_x_bf16(g)) return {};
  return ws_.view(cache_.x_bf16, {g.B, g.T});
}

TensorView<bf16> LinformerCompressFirst::input_bf16(const BatchGeometry& g) const {
  return caches_x_bf16(g) ? ws_.view(cache_.x_bf16, {g.B, g.T}).reshape(Shape{g.rows(), C_}) : TensorView<bf16>{};
}

TensorView<const float> LinformerCompressFirst::masked_input(const BatchGeometry& g, TensorView<const float> x) const {
  bool padded = false;
  for (int64_t b = 0; b < g.B; ++b) padded |= g.lengths[b] < g.T;
  if (!padded) return x;
  const TensorView<float> xm = core_.ctx_buffer({g.B, g.T});
  std::copy(x.data(), x.data() + x.numel(), xm.data());
  zero_padding_rows(g, xm);
  return xm;
}

TensorView<float> LinformerCompressFirst::project_queries(const BatchGeometry& g, TensorView<const float> x,
                                                          TensorView<const bf16> x_bf16, const QueryRows* rows) const {
  const int64_t B = g.B, T = g.T, Tq = rows ? rows->Tq : T;
  const Extents eq{B, Tq};
  const TensorView<float> q = ws_.view(cache_.q, eq);
  // The queries' input (B·Tq, C): x, or its query rows (and their rounding) gathered.
  const TensorView<const float> xq2 = rows ? in_proj_.gather_query_rows(*rows, B, x) : x.reshape(Shape{B * T, C_});
  TensorView<const bf16> xq_bf16 = x_bf16.data() ? x_bf16.reshape(Shape{B * T, C_}) : TensorView<const bf16>{};
  if (rows && x_bf16.data()) xq_bf16 = in_proj_.gather_query_rows(*rows, B, x_bf16);
  if (x_bf16.data())  // written rounded (Q feeds only bf16 products)
    matmul(xq_bf16, in_proj_.w_bf16(0, 1).transpose(0, 1), ws_.view(compressed_.q_bf16, eq).reshape(Shape{B * Tq, C_}),
           in_proj_.bias(0));
  else
    matmul(xq2, in_proj_.w(0, 1).transpose(0, 1), q.reshape(Shape{B * Tq, C_}), Accumulate::overwrite,
           in_proj_.bias(0));
  return q;
}

void LinformerCompressFirst::compress_and_project(const BatchGeometry& g, TensorView<const float> x,
                                                  TensorView<const bf16> x_bf16) const {
  const Extents e{g.B, g.T};
  const TensorView<float> xc_e = ws_.view(cache_.xc_e, e), xc_f = ws_.view(cache_.xc_f, e);
  const TensorView<const float> xm = masked_input(g, x);
  proj_e_.forward(g, xm, xc_e, x_bf16);
  if (!same_compression_) proj_f_.forward(g, xm, xc_f, x_bf16);  // else xc_f is xc_e
  matmul(flat_rows(xc_e), in_proj_.w(1, 2).transpose(0, 1), flat_rows(compressed(e, 0)), Accumulate::overwrite,
         in_proj_.bias(1));
  matmul(flat_rows(xc_f), in_proj_.w(2, 3).transpose(0, 1), flat_rows(compressed(e, 1)), Accumulate::overwrite,
         in_proj_.bias(2));
}

void LinformerCompressFirst::project_backward(const Extents& e) const {
  // In the forward pass: K̃ = x̃_E W_Kᵀ + b_K, Ṽ = x̃_F W_Vᵀ + b_V. So dW_K += dK̃ᵀ x̃_E,
  // dx̃_E = dK̃ W_K (and the same for V; one matmul each when x̃_E is x̃_F).
  const TensorView<float> xc_e = ws_.view(cache_.xc_e, e), xc_f = ws_.view(cache_.xc_f, e);
  const TensorView<float> d_xc_e = ws_.view(scratch_.d_xc_e, e), d_xc_f = ws_.view(scratch_.d_xc_f, e);
  const TensorView<float> d_kv = d_compressed(e), d_k = d_compressed(e, 0), d_v = d_compressed(e, 1);
  if (same_compression_) {
    matmul(flat_rows(d_kv).transpose(0, 1), flat_rows(xc_e), in_proj_.dw(1, 3), Accumulate::add);
    matmul(flat_rows(d_kv), in_proj_.w(1, 3), flat_rows(d_xc_e));
  } else {
    matmul(flat_rows(d_k).transpose(0, 1), flat_rows(xc_e), in_proj_.dw(1, 2), Accumulate::add);
    matmul(flat_rows(d_v).transpose(0, 1), flat_rows(xc_f), in_proj_.dw(2, 3), Accumulate::add);
    matmul(flat_rows(d_k), in_proj_.w(1, 2), flat_rows(d_xc_e));
    matmul(flat_rows(d_v), in_proj_.w(2, 3), flat_rows(d_xc_f));
  }
}

void LinformerCompressFirst::compress_backward(const BatchGeometry& g, TensorView<const float> x,
                                               TensorView<const bf16> x_bf16, TensorView<float> d_xm) const {
  // x̃ = P(real ⊙ x): d(real ⊙ x) = Pᵀ dx̃, padded rows zero.
  const Extents e{g.B, g.T};
  const TensorView<const float> xm = masked_input(g, x);
  proj_e_.backward(g, ws_.view(scratch_.d_xc_e, e), xm, d_xm, Accumulate::overwrite, x_bf16);
  if (!same_compression_) proj_f_.backward(g, ws_.view(scratch_.d_xc_f, e), xm, d_xm, Accumulate::add, x_bf16);
}

void LinformerCompressFirst::run_forward(const BatchGeometry& g, TensorView<const float> x, TensorView<float> y,
                                         const uint8_t* /*key_valid*/, const Pass& pass, bool x_rounded,
                                         const QueryRows* rows) {
  const Extents e{g.B, g.T}, eq{g.B, rows ? rows->Tq : g.T};
  // Q = x W_Qᵀ + b_Q; x̃ = P(real ⊙ x) (B, K, C); K̃ = x̃_E W_Kᵀ + b_K, Ṽ = x̃_F W_Vᵀ + b_V.
  const TensorView<const bf16> x_bf16 = x_rounded ? x_bf16_from_cache(g) : round_x_into_bf16_cache(g, x);
  const TensorView<float> q = project_queries(g, x, x_bf16, rows);
  compress_and_project(g, x, x_bf16);
  if (core_.runs_bf16()) round_heads(e, eq, q, /*queries_rounded=*/x_bf16.data() != nullptr);
  core_.forward(g, operands(e, eq, q), y, /*key_valid=*/nullptr, pass, rows);
}

void LinformerCompressFirst::run_backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const float> dy,
                                          TensorView<float> dx, const Pass& pass, const QueryRows* rows) {
  const int64_t B = g.B, T = g.T, Tq = rows ? rows->Tq : T;
  const Extents e{B, T}, eq{B, Tq};
  const TensorView<float> d_q = ws_.view(scratch_.d_q, eq);
  core_.backward(g, dy, operands(e, eq, ws_.view(cache_.q, eq)), gradients(e, d_q), pass, rows);
  compressed_bias_backward(e);
  project_backward(e);
  // Q = x_q W_Qᵀ + b_Q, where x_q is x or its query rows (then dx_q goes to its own scratch,
  // scattered into dx at the end).
  const TensorView<const bf16> x_bf16 = x_bf16_from_cache(g);  // (B, T, C) or empty
  const auto dx2 = dx.reshape(Shape{B * T, C_});
  const TensorView<float> dxq2 = rows ? in_proj_.query_rows_dx(eq).reshape(Shape{B * Tq, C_}) : dx2;
  if (rows)
    in_proj_.backward_queries(eq, d_q, in_proj_.query_rows_input(eq),
                              x_bf16.data() ? in_proj_.query_rows_input_bf16(eq) : TensorView<bf16>{}, dxq2,
                              core_.d_ctx_bf16_buffer(eq));
  else
    in_proj_.backward_queries(eq, d_q, x, x_bf16, dxq2, core_.d_ctx_bf16_buffer(eq));
  // d(real ⊙ x) into d_ctx's buffer (done with), or with query rows straight into dx, which dx_q's
  // rows then add to.
  const TensorView<float> d_xm = rows ? dx : core_.d_ctx_buffer(e);
  compress_backward(g, x, x_bf16, d_xm);
  if (rows)
    scatter_add_rows(dxq2.data(), rows->source, dx2.data(), B * Tq, C_);
  else
    add_into(dx2.data(), d_xm.data(), dx2.numel());
}

}  // namespace linformer

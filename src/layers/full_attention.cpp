#include "linformer/layers/full_attention.h"

namespace linformer {

FullAttention::FullAttention(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer,
                             int64_t max_batch)
    : Attention(spec, ws, layer),
      in_proj_(spec, params, ws, layer, max_batch, /*whole=*/true, /*x_rounding_cached=*/false),
      core_(spec, params, ws, layer, max_batch, Dim::tokens(spec.seq_len), in_proj_.linear.w_bf16.data() != nullptr,
            layer_takes_query_rows(spec, ws, layer)) {
  const Dim B = Dim::batch(max_batch), T = Dim::tokens(spec.seq_len);
  cache_.qkv = ws.reserve_cache(layer, "attn.qkv", {B, T, 3 * C_});
  // Q, K, V each in a dense block of its own, not side by side in wider rows: head views of those
  // run the attention's batched products on oneDNN's brgemm kernels, head views of a wider row on
  // its slower gemm:jit (results/2026-11-27_zen4_bf16/). In inference too (the workspace plan).
  if (in_proj_.linear.w_bf16.data() != nullptr)
    cache_.qkv_bf16 = ws.reserve_cache<bf16>(layer, "attn.qkv_bf16", {3, B, T, C_});
  scratch_.d_qkv = ws.reserve_backward("attn.d_qkv", {B, T, 3 * C_});
}

TensorView<bf16> FullAttention::input_bf16(const BatchGeometry& g) const {
  // in_proj writes Q | K | V rounded only when it caches x.
  if (!(core_.runs_bf16() && in_proj_.linear.keeps_bf16_caches())) return {};
  return in_proj_.linear.input_bf16(g.rows());
}

TensorView<float> FullAttention::queries_f32(const Extents& eq, const QueryRows* rows) const {
  if (rows) return in_proj_.query_rows_q(eq);
  return ws_.view(cache_.qkv, eq).slice(2, 0, C_);
}

bool FullAttention::project(const BatchGeometry& g, TensorView<const float> x, bool x_rounded, const QueryRows* rows) {
  const int64_t B = g.B, T = g.T;
  const Extents e{B, T};
  const TensorView<float> qkv = ws_.view(cache_.qkv, e).reshape(Shape{B * T, 3 * C_});
  // On the bf16 path of training, Q, K and V feed only bf16 products: their projection then writes
  // them rounded into their bf16 blocks, never in f32.
  const auto qkv_bf16 = [&] { return ws_.view(cache_.qkv_bf16, e).reshape(Shape{3, B * T, C_}); };
  if (rows)
    return in_proj_.project_in_parts(g, *rows, x, x_rounded, /*kv_bias=*/true, qkv.slice(1, C_, 3 * C_),
                                     core_.runs_bf16() ? qkv_bf16() : TensorView<bf16>{});
  const auto x2 = x.reshape(Shape{B * T, C_});
  const bool projected_rounded =
      x_rounded || (core_.runs_bf16() && in_proj_.linear.keeps_bf16_caches() && x2.is_contiguous());
  if (x_rounded)
    in_proj_.linear.forward_rounded(qkv_bf16());
  else if (projected_rounded)
    in_proj_.linear.forward(x2, qkv_bf16());
  else
    in_proj_.linear.forward(x2, qkv);
  return projected_rounded;
}

void FullAttention::round_heads(const Extents& e, const Extents& eq, const QueryRows* rows) const {
  // Each part into its dense block (convert_to_bf16 writes a column slice densely).
  convert_to_bf16(queries_f32(eq, rows), ws_.view(cache_.qkv_bf16, eq).select(0, 0).data());
  for (int which = 1; which < 3; ++which)
    convert_to_bf16(ws_.view(cache_.qkv, e).slice(2, which * C_, (which + 1) * C_),
                    ws_.view(cache_.qkv_bf16, e).select(0, which).data());
}

HeadOperands FullAttention::operands(const Extents& e, const Extents& eq, const QueryRows* rows) const {
  const TensorView<float> qkv = ws_.view(cache_.qkv, e);  // (B, T, 3C)
  HeadOperands h;
  h.queries = heads(queries_f32(eq, rows));
  h.keys = heads(qkv.slice(2, C_, 2 * C_));
  h.values = heads(qkv.slice(2, 2 * C_, 3 * C_));
  if (core_.runs_bf16()) {  // (3, B, T, C): Q's first B·Tq rows are its (B, Tq, C)
    h.queries_bf16 = heads(ws_.view(cache_.qkv_bf16, eq).select(0, 0));
    h.keys_bf16 = heads(ws_.view(cache_.qkv_bf16, e).select(0, 1));
    h.values_bf16 = heads(ws_.view(cache_.qkv_bf16, e).select(0, 2));
  }
  return h;
}

HeadGradients FullAttention::gradients(const Extents& e, const Extents& eq, const QueryRows* rows) const {
  const TensorView<float> d_qkv = ws_.view(scratch_.d_qkv, e);  // (B, T, 3C)
  return {heads(rows ? in_proj_.query_rows_dq(eq) : d_qkv.slice(2, 0, C_)),
          heads(d_qkv.slice(2, C_, 2 * C_)),
          heads(d_qkv.slice(2, 2 * C_, 3 * C_)),
          {},
          {}};
}

void FullAttention::run_forward(const BatchGeometry& g, TensorView<const float> x, TensorView<float> y,
                                const uint8_t* key_valid, const Pass& pass, bool x_rounded, const QueryRows* rows) {
  const Extents e{g.B, g.T}, eq{g.B, rows ? rows->Tq : g.T};
  const bool projected_rounded = project(g, x, x_rounded, rows);
  if (core_.runs_bf16() && !projected_rounded) round_heads(e, eq, rows);
  core_.forward(g, operands(e, eq, rows), y, key_valid, pass, rows);
}

void FullAttention::run_backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const float> dy,
                                 TensorView<float> dx, const Pass& pass, const QueryRows* rows) {
  const Extents e{g.B, g.T}, eq{g.B, rows ? rows->Tq : g.T};
  core_.backward(g, dy, operands(e, eq, rows), gradients(e, eq, rows), pass, rows);
  // In the forward pass: [Q | K | V] = x W_inᵀ + b_in (Q at the query rows, when given).
  const TensorView<float> d_qkv = ws_.view(scratch_.d_qkv, e);
  if (rows)
    in_proj_.backward_in_parts(g, *rows, x, d_qkv, dx, /*kv_bias=*/true, core_.d_ctx_bf16_buffer(eq));
  else
    in_proj_.linear.backward(d_qkv.reshape(Shape{g.rows(), 3 * C_}), x.reshape(Shape{g.rows(), C_}),
                             dx.reshape(Shape{g.rows(), C_}));
}

}  // namespace linformer

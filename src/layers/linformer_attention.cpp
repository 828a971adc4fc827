#include "linformer/layers/linformer_attention.h"

#include "linformer/kernels/reduce.h"

#include <tuple>

namespace linformer {

using config::ProjectionKind;

// ---- what both families share -----------------------------------------------------------------

LinformerAttention::LinformerAttention(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer,
                                       int64_t max_batch, bool compress_first)
    : Attention(spec, ws, layer),
      K_(spec.k_per_layer[layer]),
      // Compress-first runs in_proj's slices apart; with a linear E it keeps x's rounding.
      in_proj_(spec, params, ws, layer, max_batch, /*whole=*/!compress_first,
               /*x_rounding_cached=*/compress_first && spec.projection == ProjectionKind::linear),
      core_(spec, params, ws, layer, max_batch, Dim(K_), in_proj_.linear.w_bf16.data() != nullptr,
            layer_takes_query_rows(spec, ws, layer)) {
  const ProjectionNames names = projection_names(spec, layer);
  const bool keeps_bf16 = in_proj_.linear.w_bf16.data() != nullptr;
  const bool bf16_scratch = keeps_bf16 && compress_first && spec.projection == ProjectionKind::linear;
  proj_e_ = Compression(spec, params, names.e, ws, layer, max_batch, bf16_scratch);
  proj_f_ = Compression(spec, params, names.f, ws, layer, max_batch, bf16_scratch);
  const Dim B = Dim::batch(max_batch), T = Dim::tokens(spec.seq_len);
  // K̃ and Ṽ in dense blocks, so their projections and the products reading them run on brgemm
  // (oneDNN 2.6 gives a product writing rows of stride 2C to gemm:jit, about 2.5x slower in f32).
  compressed_.kv = ws.reserve_cache(layer, "attn.kv", {2, B, K_, C_});
  if (keeps_bf16) {  // in inference too, so the workspace plan counts them
    compressed_.q_bf16 = ws.reserve_cache<bf16>(layer, "attn.q_bf16", {B, T, C_});
    compressed_.kv_bf16 = ws.reserve_cache<bf16>(layer, "attn.kv_bf16", {2, B, K_, C_});
  }
  compressed_.d_kv = ws.reserve_backward("attn.d_kv", {B, K_, 2 * C_});
}

void LinformerAttention::round_heads(const Extents& e, const Extents& eq, TensorView<const float> queries,
                                     bool queries_rounded) const {
  if (!queries_rounded) convert_to_bf16(queries, ws_.view(compressed_.q_bf16, eq).data());
  const TensorView<bf16> kv_bf16 = ws_.view(compressed_.kv_bf16, e);
  for (int which = 0; which < 2; ++which) convert_to_bf16(compressed(e, which), kv_bf16.select(0, which).data());
}

HeadOperands LinformerAttention::operands(const Extents& e, const Extents& eq, TensorView<const float> queries) const {
  HeadOperands h;
  h.queries = heads(queries);
  h.keys = heads(compressed(e, 0));
  h.values = heads(compressed(e, 1));
  if (core_.runs_bf16()) {
    const TensorView<const bf16> kv_bf16 = ws_.view(compressed_.kv_bf16, e);  // (2, B, K, C)
    h.queries_bf16 = heads(TensorView<const bf16>(ws_.view(compressed_.q_bf16, eq)));
    h.keys_bf16 = heads(kv_bf16.select(0, 0));
    h.values_bf16 = heads(kv_bf16.select(0, 1));
  }
  return h;
}

HeadGradients LinformerAttention::gradients(const Extents& e, TensorView<float> d_queries) const {
  return {heads(d_queries), heads(d_compressed(e, 0)), heads(d_compressed(e, 1)), {}, {}};
}

void LinformerAttention::compressed_bias_backward(const Extents& e) const {
  add_column_sums(d_compressed(e).data(), e.B * K_, 2 * C_, 2 * C_, in_proj_.d_bias(1));
}

// ---- project first: max pooling, per-head E or conv filters ---------------------------------

LinformerProjectFirst::LinformerProjectFirst(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer,
                                             int64_t max_batch)
    : LinformerAttention(spec, params, ws, layer, max_batch, /*compress_first=*/false) {
  const Dim B = Dim::batch(max_batch), T = Dim::tokens(spec.seq_len);
  cache_.qkv = ws.reserve_cache(layer, "attn.qkv", {B, T, 3 * C_});
  scratch_.d_qkv = ws.reserve_backward("attn.d_qkv", {B, T, 3 * C_});
  if (spec.local_window > 0) {
    cache_.kv_band = ws.reserve_cache(layer, "attn.kv_band", {B, T, 2 * C_});
    scratch_.d_kv_band = ws.reserve_backward("attn.d_kv_band", {B, T, 2 * C_});
  }
}

std::pair<TensorView<float>, TensorView<float>> LinformerProjectFirst::band_heads(TensorView<float> kv) const {
  return {heads(kv.slice(2, 0, C_)), heads(kv.slice(2, C_, 2 * C_))};
}

HeadOperands LinformerProjectFirst::with_band(HeadOperands h, const Extents& e) const {
  if (cache_.kv_band) std::tie(h.band_keys, h.band_values) = band_heads(ws_.view(cache_.kv_band, e));
  return h;
}

HeadGradients LinformerProjectFirst::with_band(HeadGradients d, const Extents& e) const {
  if (scratch_.d_kv_band) std::tie(d.band_keys, d.band_values) = band_heads(ws_.view(scratch_.d_kv_band, e));
  return d;
}

// In the forward pass: kv_band = [K | V] + [b_K | b_V]. So dK | dV += its gradient, db_K | db_V +=
// its column sums.
void LinformerProjectFirst::band_backward(const Extents& e, TensorView<float> d_qkv) const {
  const TensorView<float> d_kv = ws_.view(scratch_.d_kv_band, e);
  const int64_t rows = e.B * e.T;
  const float* src = d_kv.data();
  float* dst = d_qkv.data();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < 2 * C_; ++c) dst[r * 3 * C_ + C_ + c] += src[r * 2 * C_ + c];
  add_column_sums(d_kv.data(), rows, 2 * C_, 2 * C_, in_proj_.d_bias(1));
}

TensorView<float> LinformerProjectFirst::queries_f32(const Extents& eq, const QueryRows* rows) const {
  if (rows) return in_proj_.query_rows_q(eq);
  return ws_.view(cache_.qkv, eq).slice(2, 0, C_);
}

void LinformerProjectFirst::run_forward(const BatchGeometry& g, TensorView<const float> x, TensorView<float> y,
                                        const uint8_t* /*key_valid*/, const Pass& pass, bool x_rounded,
                                        const QueryRows* rows) {
  const int64_t B = g.B, T = g.T;
  const Extents e{B, T}, eq{B, rows ? rows->Tq : T};
  // Project without bias; Q gets its bias now, K and V after compression.
  const TensorView<float> qkv = ws_.view(cache_.qkv, e);
  const TensorView<float> qkv2 = qkv.reshape(Shape{B * T, 3 * C_});
  if (rows)  // Q in its own cache, with its bias
    in_proj_.project_in_parts(g, *rows, x, x_rounded, /*kv_bias=*/false, qkv2.slice(1, C_, 3 * C_), {});
  else if (x_rounded)
    in_proj_.linear.forward_rounded(qkv2, /*with_bias=*/false);
  else
    in_proj_.linear.forward(x.reshape(Shape{B * T, C_}), qkv2, /*with_bias=*/false);
  if (!rows) add_bias_rows(qkv.data(), B * T, C_, 3 * C_, in_proj_.bias(0));
  if (cache_.kv_band) {  // the band's keys and values: every row, with their biases
    float* kv = ws_.view(cache_.kv_band, e).data();
    const float* src = qkv.data();
    const float* bias = in_proj_.bias(1);  // b_K | b_V
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < B * T; ++r)
      for (int64_t c = 0; c < 2 * C_; ++c) kv[r * 2 * C_ + c] = src[r * 3 * C_ + C_ + c] + bias[c];
  }
  // K̃ = P_E(real ⊙ K) + b_K, Ṽ = P_F(real ⊙ V) + b_V.
  for (int which = 0; which < 2; ++which) {
    const TensorView<float> part = qkv.slice(2, (1 + which) * C_, (2 + which) * C_);
    zero_padding_rows(g, part);
  }
  proj_e_.forward(g, qkv.slice(2, C_, 2 * C_), compressed(e, 0));
  proj_f_.forward(g, qkv.slice(2, 2 * C_, 3 * C_), compressed(e, 1));
  for (int which = 0; which < 2; ++which)
    add_bias_rows(compressed(e, which).data(), B * K_, C_, C_, in_proj_.bias(1 + which));
  if (core_.runs_bf16()) round_heads(e, eq, queries_f32(eq, rows), /*queries_rounded=*/false);
  core_.forward(g, with_band(operands(e, eq, queries_f32(eq, rows)), e), y, /*key_valid=*/nullptr, pass, rows);
}

void LinformerProjectFirst::run_backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const float> dy,
                                         TensorView<float> dx, const Pass& pass, const QueryRows* rows) {
  const int64_t B = g.B, T = g.T;
  const Extents e{B, T}, eq{B, rows ? rows->Tq : T};
  const TensorView<float> qkv = ws_.view(cache_.qkv, e), d_qkv = ws_.view(scratch_.d_qkv, e);
  const TensorView<float> d_queries = rows ? in_proj_.query_rows_dq(eq) : ws_.view(scratch_.d_qkv, eq).slice(2, 0, C_);
  core_.backward(g, dy, with_band(operands(e, eq, queries_f32(eq, rows)), e), with_band(gradients(e, d_queries), e),
                 pass, rows);
  compressed_bias_backward(e);
  // In the forward pass: K̃ = P_E(real ⊙ K part), Ṽ = P_F(real ⊙ V part) (+ bias).
  proj_e_.backward(g, d_compressed(e, 0), qkv.slice(2, C_, 2 * C_), d_qkv.slice(2, C_, 2 * C_), Accumulate::overwrite);
  proj_f_.backward(g, d_compressed(e, 1), qkv.slice(2, 2 * C_, 3 * C_), d_qkv.slice(2, 2 * C_, 3 * C_),
                   Accumulate::overwrite);
  if (scratch_.d_kv_band) band_backward(e, d_qkv);
  if (rows) {  // K̃'s and Ṽ's biases done above
    in_proj_.backward_in_parts(g, *rows, x, d_qkv, dx, /*kv_bias=*/false, core_.d_ctx_bf16_buffer(eq));
    return;
  }
  add_column_sums(d_qkv.data(), B * T, C_, 3 * C_, in_proj_.d_bias(0));  // Q bias
  in_proj_.linear.backward(d_qkv.reshape(Shape{B * T, 3 * C_}), x.reshape(Shape{B * T, C_}),
                           dx.reshape(Shape{B * T, C_}), Accumulate::overwrite, /*with_bias=*/false);
}

}  // namespace linformer

#include "linformer/layers/in_projection.h"

#include "linformer/kernels/reduce.h"

namespace linformer {

bool layer_takes_query_rows(const ModelSpec& spec, const Workspace& ws, int layer) {
  return !ws.inference() && layer == spec.layers - 1;
}

InProjection::InProjection(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_batch,
                           bool whole, bool x_rounding_cached)
    : linear(params, "layers." + std::to_string(layer) + ".attn.in_proj"), ws_(&ws), C_(spec.d_model) {
  if (whole) linear.reserve_bf16_operands(ws, Dim::rows(max_batch * spec.seq_len));
  if (!layer_takes_query_rows(spec, ws, layer)) return;
  const Dim B = Dim::batch(max_batch), T = Dim::tokens(spec.seq_len);
  xq_ = ws.reserve_cache(layer, "attn.xq", {B, T, C_});
  d_xq_ = ws.reserve_backward("attn.d_xq", {B, T, C_});
  // The rounded query rows, gathered from the rounded x (compress-first's cache, in_proj's).
  if (whole ? linear.keeps_bf16_caches() : x_rounding_cached && linear.w_bf16.data() != nullptr)
    xq_bf16_ = ws.reserve_cache<bf16>(layer, "attn.xq_bf16", {B, T, C_});
  if (whole) {
    q_rows_ = ws.reserve_cache(layer, "attn.q_rows", {B, T, C_});
    d_q_rows_ = ws.reserve_backward("attn.d_q_rows", {B, T, C_});
  }
}

TensorView<const float> InProjection::gather_query_rows(const QueryRows& rows, int64_t B,
                                                        TensorView<const float> x) const {
  LF_CHECK(x.is_contiguous(), "attention: query rows of a strided input");
  const TensorView<float> xq = ws_->view(xq_, {B, rows.Tq}).reshape(Shape{B * rows.Tq, C_});
  gather_rows(x.data(), rows.source, xq.data(), B * rows.Tq, C_);
  return xq;
}

TensorView<const bf16> InProjection::gather_query_rows(const QueryRows& rows, int64_t B,
                                                       TensorView<const bf16> x_bf16) const {
  const TensorView<bf16> xq_bf16 = ws_->view(xq_bf16_, {B, rows.Tq}).reshape(Shape{B * rows.Tq, C_});
  gather_rows(x_bf16.data(), rows.source, xq_bf16.data(), B * rows.Tq, C_);
  return xq_bf16;
}

bool InProjection::project_in_parts(const BatchGeometry& g, const QueryRows& rows, TensorView<const float> x,
                                    bool x_rounded, bool kv_bias, TensorView<float> kv,
                                    TensorView<bf16> qkv_bf16) const {
  const int64_t B = g.B, T = g.T, Tq = rows.Tq;
  const Extents eq{B, Tq};
  const auto x2 = x.reshape(Shape{B * T, C_});
  const TensorView<const float> xq = gather_query_rows(rows, B, x);
  const TensorView<float> q = query_rows_q(eq).reshape(Shape{B * Tq, C_});
  const TensorView<bf16> x_bf16 = linear.input_bf16(B * T);    // (B·T, C): in_proj's input cache, or empty
  if (!x_rounded && !(x_bf16.data() && x2.is_contiguous())) {  // f32 operands (rounded in each matmul on the bf16 path)
    matmul(x2, w(1, 3).transpose(0, 1), kv, Accumulate::overwrite, kv_bias ? bias(1) : nullptr);
    matmul(xq, w(0, 1).transpose(0, 1), q, Accumulate::overwrite, bias(0));
    return false;
  }
  // bf16 operands: x rounded once into in_proj's cache (by its maker when x_rounded), its rows gathered.
  if (!x_rounded) convert_to_bf16(x2, x_bf16.data());
  const TensorView<const bf16> xq_bf16 = gather_query_rows(rows, B, TensorView<const bf16>(x_bf16));
  if (qkv_bf16.data()) {  // straight into the dense Q, K, V blocks of the bf16 cache
    for (int which = 1; which < 3; ++which)
      matmul(TensorView<const bf16>(x_bf16), w_bf16(which, which + 1).transpose(0, 1), qkv_bf16.select(0, which),
             bias(which));
    matmul(xq_bf16, w_bf16(0, 1).transpose(0, 1), qkv_bf16.select(0, 0).slice(0, 0, B * Tq), bias(0));
    return true;
  }
  // Linformer projecting first: K and V in f32 for their compression, Q in f32 (rounded with K̃, Ṽ).
  matmul(TensorView<const bf16>(x_bf16), w_bf16(1, 3).transpose(0, 1), kv, Accumulate::overwrite,
         kv_bias ? bias(1) : nullptr);
  matmul(xq_bf16, w_bf16(0, 1).transpose(0, 1), q, Accumulate::overwrite, bias(0));
  return false;
}

void InProjection::backward_in_parts(const BatchGeometry& g, const QueryRows& rows, TensorView<const float> x,
                                     TensorView<float> d_qkv, TensorView<float> dx, bool kv_bias,
                                     TensorView<bf16> d_q_bf16) const {
  const int64_t B = g.B, T = g.T, Tq = rows.Tq;
  const Extents eq{B, Tq};
  const auto x2 = x.reshape(Shape{B * T, C_});
  const auto dx2 = dx.reshape(Shape{B * T, C_});
  const TensorView<float> d_kv2 = d_qkv.reshape(Shape{B * T, 3 * C_}).slice(1, C_, 3 * C_);  // (B·T, 2C)
  const TensorView<float> dxq2 = query_rows_dx(eq).reshape(Shape{B * Tq, C_});
  if (kv_bias) add_column_sums(d_kv2.data(), B * T, 2 * C_, 3 * C_, d_bias(1));
  const TensorView<const bf16> x_bf16 = linear.input_bf16(B * T);  // (B·T, C), forward's rounding
  const bool rounded = x_bf16.data() && x2.is_contiguous();
  if (rounded) {  // dKV rounded once for its two products
    const TensorView<const bf16> d_kv_bf16 = convert_to_bf16(d_kv2, linear.output_gradient_bf16(B * T).data());
    matmul(d_kv_bf16.transpose(0, 1), x_bf16, dw(1, 3), Accumulate::add);
    matmul(d_kv_bf16, w_bf16(1, 3), dx2);
  } else {
    matmul(d_kv2.transpose(0, 1), x2, dw(1, 3), Accumulate::add);
    matmul(d_kv2, w(1, 3), dx2);
  }
  backward_queries(eq, query_rows_dq(eq), query_rows_input(eq),
                   rounded ? query_rows_input_bf16(eq) : TensorView<bf16>{}, dxq2, d_q_bf16);
  scatter_add_rows(dxq2.data(), rows.source, dx2.data(), B * Tq, C_);
}

void InProjection::backward_queries(const Extents& eq, TensorView<const float> d_q, TensorView<const float> xq,
                                    TensorView<const bf16> xq_bf16, TensorView<float> dxq,
                                    TensorView<bf16> d_q_bf16) const {
  const int64_t rows = eq.B * eq.T;
  const TensorView<const float> d_q2 = d_q.reshape(Shape{rows, C_});
  add_column_sums(d_q2.data(), rows, C_, d_q2.stride(0), d_bias(0));
  if (xq_bf16.data()) {  // dQ rounded once for both products
    const TensorView<const bf16> d_q_rounded = convert_to_bf16(d_q2, d_q_bf16.data());
    matmul(d_q_rounded.transpose(0, 1), xq_bf16.reshape(Shape{rows, C_}), dw(0, 1), Accumulate::add);
    matmul(d_q_rounded, w_bf16(0, 1), dxq);
  } else {
    matmul(d_q2.transpose(0, 1), xq.reshape(Shape{rows, C_}), dw(0, 1), Accumulate::add);
    matmul(d_q2, w(0, 1), dxq);
  }
}

}  // namespace linformer

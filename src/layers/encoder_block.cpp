#include "linformer/layers/encoder_block.h"

#include "linformer/kernels/dropout.h"
#include "linformer/kernels/reduce.h"

namespace linformer {

namespace {
// y = x + dropout(branch) in one pass; y may be branch itself (elementwise). All (rows, C); with
// query rows, row r takes the mask of the layer's row rows->source[r].
void residual_add(TensorView<const float> x, TensorView<float> branch, TensorView<float> y, float p, const Pass& pass,
                  uint64_t stream, const QueryRows* rows) {
  dropout_add_rows(x.data(), branch.data(), y.data(), y.size(0), y.size(1), rows ? rows->source : nullptr,
                   pass.training ? p : 0.0f, pass.seed, stream);
}

// The branch's gradient: dropout(dy) with the forward mask, written into scratch; without dropout
// dy itself (no copy).
TensorView<const float> residual_backward(TensorView<const float> dy, TensorView<float> scratch, float p,
                                          const Pass& pass, uint64_t stream, const QueryRows* rows) {
  if (!pass.training || p <= 0.0f) return dy;
  dropout_apply_rows(dy.data(), scratch.data(), dy.size(0), dy.size(1), rows ? rows->source : nullptr, p, pass.seed,
                     stream);
  return scratch;
}

}  // namespace

void EncoderBlock::declare(ParameterTable& table, const ModelSpec& spec, int layer) {
  const std::string p = "layers." + std::to_string(layer) + ".";
  Attention::declare(table, spec, layer);
  LayerNorm::declare(table, p + "ln_attn", spec.d_model);
  FeedForward::declare(table, spec, layer);
  LayerNorm::declare(table, p + "ln_ffn", spec.d_model);
}

double EncoderBlock::forward_flops(const ModelSpec& spec, int layer, int64_t B, int64_t T, int64_t Tq) {
  return Attention::forward_flops(spec, layer, B, T, Tq) +
         FeedForward::forward_flops(spec, static_cast<double>(B * Tq));
}

EncoderBlock::EncoderBlock(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_batch)
    : spec_(spec),
      ws_(ws),
      layer_(layer),
      attention_(make_attention(spec, params, ws, layer, max_batch)),
      ffn_(spec, params, ws, layer, max_batch * spec.seq_len) {
  const std::string p = "layers." + std::to_string(layer) + ".";
  ln_attn_ = LayerNorm(params, p + "ln_attn");
  ln_ffn_ = LayerNorm(params, p + "ln_ffn");
  // Every buffer is (rows, C) or (rows), rows = B·T of the batch.
  const Dim rows = Dim::rows(max_batch * spec.seq_len);
  const int64_t C = spec.d_model;
  const bool post = spec.norm == config::NormPlacement::post;
  branch_ = ws.reserve_shared("block.branch", {rows, C});
  if (!post) attn_in_ = ws.reserve_cache(layer, "attn_in", {rows, C});
  // Inference keeps nothing for backward, so buffers whose contents are dead by the time
  // they are written share: post-LN a and f are written over the branch they sum; pre-LN h
  // over attn_in.
  const bool inference = ws.inference();
  a_ = inference && post ? branch_ : ws.reserve_cache(layer, "a", {rows, C});
  h_ = inference && !post ? attn_in_ : ws.reserve_cache(layer, "h", {rows, C});
  if (post) f_ = inference ? branch_ : ws.reserve_cache(layer, "f", {rows, C});
  mean1_ = ws.reserve_cache(layer, "mean1", {rows});
  rstd1_ = ws.reserve_cache(layer, "rstd1", {rows});
  mean2_ = ws.reserve_cache(layer, "mean2", {rows});
  rstd2_ = ws.reserve_cache(layer, "rstd2", {rows});
  d_branch_ = ws.reserve_backward("block.d_branch", {rows, C});
  d_mid_ = ws.reserve_backward("block.d_mid", {rows, C});
  if (attention_->selects_queries()) d_rows_ = ws.reserve_backward("block.d_rows", {rows, C});
}

TensorView<bf16> EncoderBlock::input_bf16(const BatchGeometry& g) const {
  return spec_.norm == config::NormPlacement::post ? attention_->input_bf16(g) : TensorView<bf16>{};
}

void EncoderBlock::forward(const BatchGeometry& g, TensorView<const float> x, TensorView<float> y,
                           const uint8_t* key_valid, const Pass& pass, bool x_rounded, TensorView<bf16> y_bf16,
                           const QueryRows* rows) {
  LF_CHECK(!rows || !y_bf16.data(), "encoder block {}: query rows and a rounded output for a next block", layer_);
  // The attention's input x has every row; what follows it has Tq rows per sequence (T without rows).
  const int64_t Tq = rows ? rows->Tq : g.T, C = spec_.d_model, out_rows = g.B * Tq;
  const Shape flat{out_rows, C}, shaped{g.B, Tq, C};
  const Extents r = Extents::rows(out_rows);
  const TensorView<float> a = ws_.view(a_, r), h = ws_.view(h_, r), branch = ws_.view(branch_, r);
  float *mean2 = ws_.view(mean2_, r).data(), *rstd2 = ws_.view(rstd2_, r).data();
  const auto x2 = x.reshape(Shape{g.rows(), C});
  const uint64_t s_attn = dropout_stream(DropoutSite::attention_out, layer_, pass);
  const uint64_t s_ffn = dropout_stream(DropoutSite::ffn_out, layer_, pass);
  // a = x (at the rows) + drop(branch).
  const auto attention_residual = [&] {
    if (rows) {
      gather_rows(x2.data(), rows->source, a.data(), out_rows, C);
      residual_add(a, branch, a, spec_.dropout, pass, s_attn, rows);
    } else {
      residual_add(x2, branch, a, spec_.dropout, pass, s_attn, rows);
    }
  };

  if (spec_.norm == config::NormPlacement::post) {
    float *mean1 = ws_.view(mean1_, r).data(), *rstd1 = ws_.view(rstd1_, r).data();
    const TensorView<float> f = ws_.view(f_, r);
    attention_->forward(g, x, branch.reshape(shaped), key_valid, pass, x_rounded, rows);
    attention_residual();
    const TensorView<bf16> h_bf16 = ffn_.input_bf16(out_rows);  // bf16 path: LayerNorm rounds h for fc1
    ln_attn_.forward(a, h, mean1, rstd1, h_bf16);
    ffn_.forward(h, branch, pass, h_bf16.data() != nullptr, rows ? rows->source : nullptr);
    residual_add(h, branch, f, spec_.dropout, pass, s_ffn, rows);
    ln_ffn_.forward(f, y.reshape(flat), mean2, rstd2, y_bf16);  // and the next block's attention input
  } else {
    LF_CHECK(!x_rounded && !y_bf16.data(), "encoder block {}: pre-LN rounds its attention input itself", layer_);
    const Extents all = Extents::rows(g.rows());  // LN_attn: every row, the keys' and values' input
    float *mean1 = ws_.view(mean1_, all).data(), *rstd1 = ws_.view(rstd1_, all).data();
    const TensorView<float> attn_in = ws_.view(attn_in_, all);
    const TensorView<bf16> attn_in_bf16 = attention_->input_bf16(g);  // bf16 path: LayerNorm rounds it
    ln_attn_.forward(x2, attn_in, mean1, rstd1, attn_in_bf16);
    attention_->forward(g, attn_in.reshape(Shape{g.B, g.T, C}), branch.reshape(shaped), key_valid, pass,
                        attn_in_bf16.data() != nullptr, rows);
    attention_residual();
    const TensorView<bf16> h_bf16 = ffn_.input_bf16(out_rows);  // bf16 path: LayerNorm rounds h for fc1
    ln_ffn_.forward(a, h, mean2, rstd2, h_bf16);
    ffn_.forward(h, branch, pass, h_bf16.data() != nullptr, rows ? rows->source : nullptr);
    residual_add(a, branch, y.reshape(flat), spec_.dropout, pass, s_ffn, rows);
  }
}

void EncoderBlock::backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const float> dy,
                            TensorView<float> dx, const Pass& pass, const QueryRows* rows) {
  const int64_t Tq = rows ? rows->Tq : g.T, C = spec_.d_model, out_rows = g.B * Tq;
  const Shape shaped{g.B, Tq, C};
  const Extents r = Extents::rows(out_rows), all = Extents::rows(g.rows());
  const TensorView<float> a = ws_.view(a_, r), h = ws_.view(h_, r);
  const TensorView<float> d_branch = ws_.view(d_branch_, r), d_mid = ws_.view(d_mid_, r);
  const float *mean2 = ws_.view(mean2_, r).data(), *rstd2 = ws_.view(rstd2_, r).data();
  const auto x2 = x.reshape(Shape{g.rows(), C}), dy2 = dy.reshape(Shape{out_rows, C});
  const auto dx2 = dx.reshape(Shape{g.rows(), C});
  // The gradient at the output's rows: dx itself, or (query rows) a scratch of its own, since the
  // attention's backward writes every row of dx.
  const TensorView<float> d_out_rows = rows ? ws_.view(d_rows_, r) : dx2;
  // dx = attention's dx + d (at the rows).
  const auto add_residual_gradient = [&](TensorView<const float> d) {
    if (rows)
      scatter_add_rows(d.data(), rows->source, dx2.data(), out_rows, C);
    else
      add_into(dx2.data(), d.data(), dx2.numel());
  };
  const uint64_t s_attn = dropout_stream(DropoutSite::attention_out, layer_, pass);
  const uint64_t s_ffn = dropout_stream(DropoutSite::ffn_out, layer_, pass);

  if (spec_.norm == config::NormPlacement::post) {
    const float *mean1 = ws_.view(mean1_, r).data(), *rstd1 = ws_.view(rstd1_, r).data();
    const TensorView<float> f = ws_.view(f_, r);
    // y = LN_ffn(f): df into d_mid.
    ln_ffn_.backward(dy2, f, mean2, rstd2, d_mid);
    // f = h + drop(ffn(h)): dh = df + ffn'(drop'(df)); dh accumulates in d_out_rows (scratch).
    ffn_.backward(h, residual_backward(d_mid, d_branch, spec_.dropout, pass, s_ffn, rows), d_out_rows, pass,
                  rows ? rows->source : nullptr);
    add_into(d_out_rows.data(), d_mid.data(), d_out_rows.numel());
    // h = LN_attn(a): da into d_mid.
    ln_attn_.backward(d_out_rows, a, mean1, rstd1, d_mid);
    // a = x + drop(attn(x)): dx = da + attn'(drop'(da)).
    attention_->backward(g, x, residual_backward(d_mid, d_branch, spec_.dropout, pass, s_attn, rows).reshape(shaped),
                         dx, pass, rows);
    add_residual_gradient(d_mid);
  } else {
    const float *mean1 = ws_.view(mean1_, all).data(), *rstd1 = ws_.view(rstd1_, all).data();
    const TensorView<float> attn_in = ws_.view(attn_in_, all);
    const TensorView<float> d_attn_in = ws_.view(d_mid_, all), d_ln_attn = ws_.view(d_branch_, all);
    // y = a + drop(ffn(LN_ffn(a))): da = dy + LN_ffn'(ffn'(drop'(dy))).
    ffn_.backward(h, residual_backward(dy2, d_branch, spec_.dropout, pass, s_ffn, rows), d_mid, pass,
                  rows ? rows->source : nullptr);                 // d_mid = d(LN_ffn output)
    ln_ffn_.backward(d_mid, a, mean2, rstd2, d_out_rows);         // d_out_rows = LN_ffn'(…) (scratch for da)
    add_into(d_out_rows.data(), dy2.data(), d_out_rows.numel());  // d_out_rows = da
    // a = x + drop(attn(LN_attn(x))): dx = da + LN_attn'(attn'(drop'(da))).
    attention_->backward(g, attn_in.reshape(Shape{g.B, g.T, C}),
                         residual_backward(d_out_rows, d_branch, spec_.dropout, pass, s_attn, rows).reshape(shaped),
                         d_attn_in.reshape(Shape{g.B, g.T, C}), pass, rows);
    // d_attn_in holds d(attn_in) at every row; turn it into d(x) through LN_attn and add da.
    if (rows) {  // straight into dx; da (its own scratch) adds at the rows
      ln_attn_.backward(d_attn_in, x2, mean1, rstd1, dx2);
      add_residual_gradient(d_out_rows);
    } else {  // dx holds da
      ln_attn_.backward(d_attn_in, x2, mean1, rstd1, d_ln_attn);
      add_into(dx2.data(), d_ln_attn.data(), dx2.numel());
    }
  }
}

}  // namespace linformer

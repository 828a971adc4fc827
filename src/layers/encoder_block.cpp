#include "linformer/layers/encoder_block.h"

#include "linformer/kernels/dropout.h"
#include "linformer/kernels/reduce.h"

namespace linformer {

namespace {
// y = x + dropout(branch) in one pass; y may be branch itself (elementwise).
void residual_add(TensorView<const float> x, TensorView<float> branch, TensorView<float> y, float p, const Pass& pass,
                  uint64_t stream) {
  dropout_add(x.data(), branch.data(), y.data(), y.numel(), pass.training ? p : 0.0f, pass.seed, stream);
}

// d_branch = dropout(dy) with the forward mask.
void residual_backward(TensorView<const float> dy, TensorView<float> d_branch, float p, const Pass& pass,
                       uint64_t stream) {
  if (pass.training) dropout_apply(dy.data(), d_branch.data(), dy.numel(), p, pass.seed, stream);
  else std::copy(dy.data(), dy.data() + dy.numel(), d_branch.data());
}

}  // namespace

void EncoderBlock::declare(ParameterTable& table, const ModelSpec& spec, int layer) {
  const std::string p = "layers." + std::to_string(layer) + ".";
  Attention::declare(table, spec, layer);
  LayerNorm::declare(table, p + "ln_attn", spec.d_model);
  FeedForward::declare(table, spec, layer);
  LayerNorm::declare(table, p + "ln_ffn", spec.d_model);
}

double EncoderBlock::forward_flops(const ModelSpec& spec, int layer, int64_t B, int64_t T) {
  return Attention::forward_flops(spec, layer, B, T) + FeedForward::forward_flops(spec, static_cast<double>(B * T));
}

EncoderBlock::EncoderBlock(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_batch)
    : spec_(spec),
      ws_(ws),
      layer_(layer),
      attention_(spec, params, ws, layer, max_batch),
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
}

TensorView<bf16> EncoderBlock::input_bf16(const BatchGeometry& g) const {
  return spec_.norm == config::NormPlacement::post ? attention_.input_bf16(g) : TensorView<bf16>{};
}

void EncoderBlock::forward(const BatchGeometry& g, TensorView<const float> x, TensorView<float> y,
                           const uint8_t* key_valid, const Pass& pass, bool x_rounded, TensorView<bf16> y_bf16) {
  const int64_t rows = g.rows(), C = spec_.d_model;
  const Shape flat{rows, C}, shaped{g.B, g.T, C};
  const Extents r = Extents::rows(rows);
  const TensorView<float> a = ws_.view(a_, r), h = ws_.view(h_, r), branch = ws_.view(branch_, r);
  float *mean1 = ws_.view(mean1_, r).data(), *rstd1 = ws_.view(rstd1_, r).data();
  float *mean2 = ws_.view(mean2_, r).data(), *rstd2 = ws_.view(rstd2_, r).data();
  const auto x2 = x.reshape(flat);
  const uint64_t s_attn = dropout_stream(DropoutSite::attention_out, layer_, pass);
  const uint64_t s_ffn = dropout_stream(DropoutSite::ffn_out, layer_, pass);

  if (spec_.norm == config::NormPlacement::post) {
    const TensorView<float> f = ws_.view(f_, r);
    attention_.forward(g, x, branch.reshape(shaped), key_valid, pass, x_rounded);
    residual_add(x2, branch, a, spec_.dropout, pass, s_attn);
    const TensorView<bf16> h_bf16 = ffn_.input_bf16(rows);  // bf16 path: LayerNorm rounds h for fc1
    ln_attn_.forward(a, h, mean1, rstd1, h_bf16);
    ffn_.forward(h, branch, pass, h_bf16.data() != nullptr);
    residual_add(h, branch, f, spec_.dropout, pass, s_ffn);
    ln_ffn_.forward(f, y.reshape(flat), mean2, rstd2, y_bf16);  // and the next block's attention input
  } else {
    LF_CHECK(!x_rounded && !y_bf16.data(), "encoder block {}: pre-LN rounds its attention input itself", layer_);
    const TensorView<float> attn_in = ws_.view(attn_in_, r);
    const TensorView<bf16> attn_in_bf16 = attention_.input_bf16(g);  // bf16 path: LayerNorm rounds it
    ln_attn_.forward(x2, attn_in, mean1, rstd1, attn_in_bf16);
    attention_.forward(g, attn_in.reshape(shaped), branch.reshape(shaped), key_valid, pass,
                       attn_in_bf16.data() != nullptr);
    residual_add(x2, branch, a, spec_.dropout, pass, s_attn);
    const TensorView<bf16> h_bf16 = ffn_.input_bf16(rows);  // bf16 path: LayerNorm rounds h for fc1
    ln_ffn_.forward(a, h, mean2, rstd2, h_bf16);
    ffn_.forward(h, branch, pass, h_bf16.data() != nullptr);
    residual_add(a, branch, y.reshape(flat), spec_.dropout, pass, s_ffn);
  }
}

void EncoderBlock::backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const float> dy,
                            TensorView<float> dx, const Pass& pass) {
  const int64_t rows = g.rows(), C = spec_.d_model;
  const Shape flat{rows, C}, shaped{g.B, g.T, C};
  const Extents r = Extents::rows(rows);
  const TensorView<float> a = ws_.view(a_, r), h = ws_.view(h_, r);
  const TensorView<float> d_branch = ws_.view(d_branch_, r), d_mid = ws_.view(d_mid_, r);
  const float *mean1 = ws_.view(mean1_, r).data(), *rstd1 = ws_.view(rstd1_, r).data();
  const float *mean2 = ws_.view(mean2_, r).data(), *rstd2 = ws_.view(rstd2_, r).data();
  const auto x2 = x.reshape(flat), dy2 = dy.reshape(flat);
  const auto dx2 = dx.reshape(flat);
  const uint64_t s_attn = dropout_stream(DropoutSite::attention_out, layer_, pass);
  const uint64_t s_ffn = dropout_stream(DropoutSite::ffn_out, layer_, pass);

  if (spec_.norm == config::NormPlacement::post) {
    const TensorView<float> f = ws_.view(f_, r);
    // y = LN_ffn(f): df into d_mid.
    ln_ffn_.backward(dy2, f, mean2, rstd2, d_mid);
    // f = h + drop(ffn(h)): dh = df + ffn'(drop'(df)); dh accumulates in dx2 (used as scratch).
    residual_backward(d_mid, d_branch, spec_.dropout, pass, s_ffn);
    ffn_.backward(h, d_branch, dx2, pass);
    add_into(dx2.data(), d_mid.data(), dx2.numel());
    // h = LN_attn(a): da into d_mid.
    ln_attn_.backward(dx2, a, mean1, rstd1, d_mid);
    // a = x + drop(attn(x)): dx = da + attn'(drop'(da)).
    residual_backward(d_mid, d_branch, spec_.dropout, pass, s_attn);
    attention_.backward(g, x, d_branch.reshape(shaped), dx, pass);
    add_into(dx2.data(), d_mid.data(), dx2.numel());
  } else {
    const TensorView<float> attn_in = ws_.view(attn_in_, r);
    // y = a + drop(ffn(LN_ffn(a))): da = dy + LN_ffn'(ffn'(drop'(dy))).
    residual_backward(dy2, d_branch, spec_.dropout, pass, s_ffn);
    ffn_.backward(h, d_branch, d_mid, pass);          // d_mid = d(LN_ffn output)
    ln_ffn_.backward(d_mid, a, mean2, rstd2, dx2);     // dx2 = LN_ffn'(…) (scratch for da)
    add_into(dx2.data(), dy2.data(), dx2.numel());   // dx2 = da
    // a = x + drop(attn(LN_attn(x))): dx = da + LN_attn'(attn'(drop'(da))).
    residual_backward(dx2, d_branch, spec_.dropout, pass, s_attn);
    attention_.backward(g, attn_in.reshape(shaped), d_branch.reshape(shaped), d_mid.reshape(shaped), pass);
    // d_mid now holds d(attn_in); turn it into d(x) through LN_attn and add da.
    ln_attn_.backward(d_mid, x2, mean1, rstd1, d_branch);
    add_into(dx2.data(), d_branch.data(), dx2.numel());
  }
}

}  // namespace linformer

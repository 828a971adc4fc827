#include "linformer/layers/attention_core.h"

#include "linformer/kernels/dropout.h"
#include "linformer/kernels/softmax.h"

#include <cmath>

namespace linformer {

TensorView<float> flat_rows(TensorView<float> x) {
  LF_CHECK(x.stride(0) == x.size(1) * x.stride(1) && x.stride(2) == 1,
           "flat_rows() of a view with gaps between batches");
  return TensorView<float>(x.data(), Shape{x.size(0) * x.size(1), x.size(2)}, Shape{x.stride(1), 1});
}

void add_bias_rows(float* x, int64_t rows, int64_t C, int64_t row_stride, const float* bias) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) x[r * row_stride + c] += bias[c];
}

AttentionCore::AttentionCore(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer,
                             int64_t max_batch, Dim S, bool bf16_caches, bool query_rows)
    : spec_(&spec),
      ws_(&ws),
      layer_(layer),
      C_(spec.d_model),
      H_(spec.heads),
      D_(spec.head_dim()),
      bf16_caches_(bf16_caches) {
  out_proj_ = Linear(params, "layers." + std::to_string(layer) + ".attn.out_proj");
  out_proj_.reserve_bf16_operands(ws, Dim::rows(max_batch * spec.seq_len));
  const Dim B = Dim::batch(max_batch), T = Dim::tokens(spec.seq_len);
  if (bf16_caches) {  // in inference too, so the workspace plan counts them
    cache_.probs_bf16 = ws.reserve_cache<bf16>(layer, "attn.probs_bf16", {B, H_, T, S});
    scratch_.d_ctx_bf16 = ws.reserve_backward<bf16>("attn.d_ctx_bf16", {B, T, C_});
    scratch_.d_scores_bf16 = ws.reserve_backward<bf16>("attn.d_probs_bf16", {B, H_, T, S});
  }
  // bf16 inference keeps the scores in bf16 only (cache_.probs_bf16), so it needs less memory than
  // fp32; so does bf16 training without attention dropout (P and dP only in bf16: cache_.probs_bf16
  // and scratch_.d_scores_bf16), where attention dropout scales both in f32.
  scores_in_bf16_ = ws.inference() && cache_.probs_bf16;
  const bool dropout = spec.attention_dropout > 0 && !ws.inference();
  const bool f32_probs = !cache_.probs_bf16 || dropout;
  if (f32_probs) cache_.probs = ws.reserve_cache(layer, "attn.probs", {B, H_, T, S});
  if (dropout) cache_.probs_dropped = ws.reserve_cache(layer, "attn.probs_dropped", {B, H_, T, S});
  cache_.ctx = ws.reserve_cache(layer, "attn.ctx", {B, T, C_});
  scratch_.d_ctx = ws.reserve_backward("attn.d_ctx", {B, T, C_});
  if (f32_probs) scratch_.d_probs = ws.reserve_backward("attn.d_probs", {B, H_, T, S});
  if (query_rows && spec.attention_dropout > 0) score_rows_.reserve(static_cast<size_t>(max_batch * H_ * spec.seq_len));
  has_band_ = spec.is_linformer() && spec.local_window > 0;
  if (has_band_) {
    LF_CHECK(!bf16_caches, "attention layer {}: model.local_window runs in fp32 only (train.precision, --precision)",
             layer);
    band_ = LocalBand(spec.local_window);
    band_probs_ = ws.reserve_cache(layer, "attn.band_probs", {B, H_, T, Dim(band_.width())});
    if (dropout) band_dropped_ = ws.reserve_cache(layer, "attn.band_probs_dropped", {B, H_, T, Dim(band_.width())});
    d_band_probs_ = ws.reserve_backward("attn.d_band_probs", {B, H_, T, Dim(band_.width())});
  }
}

void AttentionCore::forward(const BatchGeometry& g, const HeadOperands& heads, TensorView<float> y,
                            const uint8_t* key_valid, const Pass& pass, const QueryRows* rows) {
  const int64_t B = g.B, Tq = rows ? rows->Tq : g.T;  // query rows per sequence
  const Extents e{B, g.T}, eq{B, Tq};
  const float scale = 1.0f / std::sqrt(static_cast<float>(D_));
  const bool rounds_bf16 = runs_bf16();
  // scores (B, H, Tq, S) = Q_h K_hᵀ, then softmax(scale · scores) over real keys.
  if (scores_in_bf16_) {  // inference: the scores in bf16, their softmax in place, then P V
    LF_CHECK(rounds_bf16, "attention layer {}: built for bf16 inference, run with f32 matmuls", layer_);
    const TensorView<float> ctx = ws_->view(cache_.ctx, eq);
    const TensorView<bf16> probs_bf16 = scores_view(cache_.probs_bf16, e, Tq);
    const int64_t S = probs_bf16.size(3);
    matmul(heads.queries_bf16, heads.keys_bf16.transpose(2, 3), probs_bf16);
    softmax_forward_bf16_in_place(probs_bf16.data(), B * H_ * Tq, S, scale, key_valid, H_ * Tq);
    matmul(TensorView<const bf16>(probs_bf16), heads.values_bf16, split_heads(ctx, H_, D_));
    out_proj_.forward(ctx.reshape(Shape{B * Tq, C_}), y.reshape(Shape{B * Tq, C_}));
    return;
  }
  // With bf16 operands the scores are a bf16 result (as in PyTorch's autocast): the bf16 path writes
  // them into the probabilities' bf16 cache, where the softmax (f32 arithmetic) overwrites them with
  // P's rounding, the P·V operand without dropout and what the backward reads: P is not kept in f32
  // (n × n floats: the memory, not the speed, is what that saves; results/2026-11-26_zen5_bf16_probs).
  // With dropout the rounding goes to the f32 cache, which dropout scales.
  const TensorView<float> probs =  // none: P in bf16 only
      cache_.probs ? scores_view(cache_.probs, e, Tq) : TensorView<float>{};
  const bool dropped = pass.training && spec_->attention_dropout > 0;
  LF_CHECK(rounds_bf16 || cache_.probs, "attention layer {}: built for bf16 training, run with f32 matmuls", layer_);
  if (rounds_bf16) {
    const TensorView<bf16> scores = scores_view(cache_.probs_bf16, e, Tq);
    matmul(heads.queries_bf16, heads.keys_bf16.transpose(2, 3), scores);
    softmax_forward_bf16_scores(scores.data(), dropped ? probs.data() : nullptr, dropped ? nullptr : scores.data(),
                                B * H_ * Tq, scores.size(3), scale, key_valid, H_ * Tq);
  } else if (has_band_) {  // one softmax over the compressed keys and the band
    LF_CHECK(!matmul_bf16_operands(), "attention layer {}: the local band runs in fp32", layer_);
    const TensorView<float> band = scores_view(band_probs_, e, Tq);
    matmul(heads.queries, heads.keys.transpose(2, 3), probs);
    band_.scores(g, band_rows(g, rows), heads.queries, heads.band_keys, band);
    LocalBand::softmax_forward(probs.data(), probs.size(3), band.data(), band.size(3), B * H_ * Tq, scale);
  } else {
    matmul(heads.queries, heads.keys.transpose(2, 3), probs);
    if (matmul_bf16_operands()) round_to_bf16_values(probs.data(), probs.numel());  // the bf16 path's numbers
    softmax_forward(probs.data(), probs.data(), B * H_ * Tq, probs.size(3), scale, key_valid, H_ * Tq);
    if (matmul_bf16_operands()) round_to_bf16_values(probs.data(), probs.numel());  // P as the bf16 path keeps it
  }
  probabilities_forward(g, heads, y, pass, rows);
}

void AttentionCore::probabilities_forward(const BatchGeometry& g, const HeadOperands& heads, TensorView<float> y,
                                          const Pass& pass, const QueryRows* rows) {
  const int64_t B = g.B, Tq = rows ? rows->Tq : g.T;
  const Extents e{B, g.T}, eq{B, Tq};
  const bool rounds_bf16 = runs_bf16(), dropped = pass.training && spec_->attention_dropout > 0;
  const TensorView<float> probs = cache_.probs ? scores_view(cache_.probs, e, Tq) : TensorView<float>{};
  const TensorView<bf16> probs_bf16 = rounds_bf16 ? scores_view(cache_.probs_bf16, e, Tq) : TensorView<bf16>{};
  TensorView<float> used = probs;
  if (dropped) {
    used = scores_view(cache_.probs_dropped, e, Tq);
    dropout_apply_rows(probs.data(), used.data(), B * H_ * Tq, probs.size(3), score_rows(g, rows),
                       spec_->attention_dropout, pass.seed, dropout_stream(DropoutSite::attention_probs, layer_, pass));
  }
  // ctx_h (B, H, Tq, D) = P_used,h V_h; the bf16 path reads P_used rounded (P's cache, or dropout's
  // result rounded over it).
  const auto used_bf16 = [&] {
    return dropped ? convert_to_bf16(used, probs_bf16.data()) : TensorView<const bf16>(probs_bf16);
  };
  if (ctx_in_bf16()) {  // written rounded, straight into out_proj's input cache (no f32 ctx)
    const TensorView<bf16> ctx_bf16 = out_proj_.input_bf16(B * Tq).reshape(Shape{B, Tq, C_});
    matmul(used_bf16(), heads.values_bf16, split_heads(ctx_bf16, H_, D_));
    out_proj_.forward_rounded(y.reshape(Shape{B * Tq, C_}));
    return;
  }
  const TensorView<float> ctx = ws_->view(cache_.ctx, eq);
  if (rounds_bf16)
    matmul(used_bf16(), heads.values_bf16, split_heads(ctx, H_, D_));
  else
    matmul(used, heads.values, split_heads(ctx, H_, D_));
  if (has_band_)
    band_.context_forward(band_rows(g, rows), band_used(g, pass, rows), heads.band_values, split_heads(ctx, H_, D_));
  out_proj_.forward(ctx.reshape(Shape{B * Tq, C_}), y.reshape(Shape{B * Tq, C_}));
}

void AttentionCore::backward(const BatchGeometry& g, TensorView<const float> dy, const HeadOperands& heads,
                             const HeadGradients& d_heads, const Pass& pass, const QueryRows* rows) {
  const int64_t B = g.B, Tq = rows ? rows->Tq : g.T;
  const Extents eq{B, Tq};
  const float scale = 1.0f / std::sqrt(static_cast<float>(D_));
  const TensorView<float> ctx = ws_->view(cache_.ctx, eq), d_ctx = ws_->view(scratch_.d_ctx, eq);
  // In the forward pass: y = ctx W_oᵀ + b_o. On the bf16 path d_ctx is written only rounded
  // (both products that read it take bf16 operands).
  const auto dy2 = dy.reshape(Shape{B * Tq, C_});
  if (ctx_in_bf16()) {
    const TensorView<bf16> d_ctx_bf16 = ws_->view(scratch_.d_ctx_bf16, eq);  // (B, Tq, C)
    convert_to_bf16(dy2, out_proj_.output_gradient_bf16(B * Tq).data());
    out_proj_.backward_rounded(dy2, d_ctx_bf16.reshape(Shape{B * Tq, C_}));
    products_backward_bf16(g, heads, d_heads, d_ctx_bf16, scale, pass, rows);
    return;
  }
  out_proj_.backward(dy2, ctx.reshape(Shape{B * Tq, C_}), d_ctx.reshape(Shape{B * Tq, C_}));
  if (runs_bf16())
    products_backward_bf16(g, heads, d_heads, convert_to_bf16(d_ctx, ws_->view(scratch_.d_ctx_bf16, eq).data()), scale,
                           pass, rows);
  else
    products_backward_f32(g, heads, d_heads, d_ctx, scale, pass, rows);
}

// In the forward pass: ctx_h = P_used V_h. So dP_used = d_ctx_h V_hᵀ, dV_h = P_usedᵀ d_ctx_h.
// P = softmax(scale · Q Kᵀ): d_scores = scale · P ⊙ (dP - Σ dP P).
// scores = Q_h K_hᵀ: dQ_h = d_scores K_h, dK_h = d_scoresᵀ Q_h.
void AttentionCore::products_backward_f32(const BatchGeometry& g, const HeadOperands& heads,
                                          const HeadGradients& d_heads, TensorView<const float> d_ctx, float scale,
                                          const Pass& pass, const QueryRows* rows) {
  const int64_t B = g.B, Tq = rows ? rows->Tq : g.T;
  const Extents e{B, g.T};
  const TensorView<float> probs = scores_view(cache_.probs, e, Tq), d_probs = scores_view(scratch_.d_probs, e, Tq);
  const bool dropped = pass.training && spec_->attention_dropout > 0;
  const TensorView<float> used = dropped ? scores_view(cache_.probs_dropped, e, Tq) : probs;
  const TensorView<const float> d_ctx_h = split_heads(d_ctx, H_, D_);
  matmul(d_ctx_h, heads.values.transpose(2, 3), d_probs);
  if (matmul_bf16_operands()) round_to_bf16_values(d_probs.data(), d_probs.numel());  // the bf16 path's numbers
  matmul(used.transpose(2, 3), d_ctx_h, d_heads.values);
  if (dropped) dropout_backward(g, Tq, pass, rows);
  // With a local band: its P·V beside, one softmax over both parts, and its Q·Kᵀ after (dQ adds
  // onto the compressed keys' part).
  const TensorView<float> band = has_band_ ? scores_view(band_probs_, e, Tq) : TensorView<float>{};
  const TensorView<float> d_band = has_band_ ? scores_view(d_band_probs_, e, Tq) : TensorView<float>{};
  if (has_band_) {
    const TensorView<const float> band_used = dropped ? scores_view(band_dropped_, e, Tq) : band;
    band_.context_backward(band_rows(g, rows), band_used, heads.band_values, d_ctx_h, d_band, d_heads.band_values);
    if (dropped)  // dP_band = dropout's mask on dP_band,used (forward's rows: score_rows_, filled there)
      dropout_apply_rows(d_band.data(), d_band.data(), B * H_ * Tq, d_band.size(3), rows ? score_rows_.data() : nullptr,
                         spec_->attention_dropout, pass.seed,
                         dropout_stream(DropoutSite::attention_band_probs, layer_, pass));
    LocalBand::softmax_backward(d_probs.data(), probs.data(), d_probs.size(3), d_band.data(), band.data(),
                                d_band.size(3), B * H_ * Tq, scale);
  } else {
    softmax_backward(d_probs.data(), probs.data(), d_probs.data(), B * H_ * Tq, d_probs.size(3), scale);
  }
  matmul(d_probs, heads.keys, d_heads.queries);
  matmul(d_probs.transpose(2, 3), heads.queries, d_heads.keys);
  if (has_band_)
    band_.scores_backward(band_rows(g, rows), d_band, heads.queries, heads.band_keys, d_heads.queries,
                          d_heads.band_keys);
}

// The same on the bf16 path: dP is a bf16 result, like the scores; d_scores feeds only bf16 products.
void AttentionCore::products_backward_bf16(const BatchGeometry& g, const HeadOperands& heads,
                                           const HeadGradients& d_heads, TensorView<const bf16> d_ctx, float scale,
                                           const Pass& pass, const QueryRows* rows) {
  const int64_t B = g.B, Tq = rows ? rows->Tq : g.T;
  const Extents e{B, g.T};
  const bool dropped = pass.training && spec_->attention_dropout > 0;
  const TensorView<const bf16> used_bf16 = scores_view(cache_.probs_bf16, e, Tq);
  const TensorView<const bf16> d_ctx_h = split_heads(d_ctx, H_, D_);
  const TensorView<bf16> d_scores = scores_view(scratch_.d_scores_bf16, e, Tq);
  const int64_t S = d_scores.size(3);
  if (!dropped) {  // dP in bf16, turned into d_scores in place
    matmul(d_ctx_h, heads.values_bf16.transpose(2, 3), d_scores);
    softmax_backward_bf16_gradient(d_scores.data(), used_bf16.data(), d_scores.data(), B * H_ * Tq, S, scale);
  } else {
    const TensorView<float> probs = scores_view(cache_.probs, e, Tq), d_probs = scores_view(scratch_.d_probs, e, Tq);
    matmul(d_ctx_h, heads.values_bf16.transpose(2, 3), d_probs);
    round_to_bf16_values(d_probs.data(), d_probs.numel());
    dropout_backward(g, Tq, pass, rows);
    softmax_backward_bf16(d_probs.data(), probs.data(), d_scores.data(), B * H_ * Tq, S, scale);
  }
  matmul(used_bf16.transpose(2, 3), d_ctx_h, d_heads.values);
  matmul(TensorView<const bf16>(d_scores), heads.keys_bf16, d_heads.queries);
  matmul(TensorView<const bf16>(d_scores).transpose(2, 3), heads.queries_bf16, d_heads.keys);
}

TensorView<const float> AttentionCore::band_used(const BatchGeometry& g, const Pass& pass, const QueryRows* rows) {
  const int64_t Tq = rows ? rows->Tq : g.T;
  const Extents e{g.B, g.T};
  const TensorView<float> band = scores_view(band_probs_, e, Tq);
  if (!pass.training || spec_->attention_dropout <= 0) return band;
  const TensorView<float> used = scores_view(band_dropped_, e, Tq);
  dropout_apply_rows(band.data(), used.data(), g.B * H_ * Tq, band.size(3), score_rows(g, rows),
                     spec_->attention_dropout, pass.seed,
                     dropout_stream(DropoutSite::attention_band_probs, layer_, pass));
  return used;
}

BandRows AttentionCore::band_rows(const BatchGeometry& g, const QueryRows* rows) {
  return rows ? BandRows{g.T, rows->Tq, rows->source} : BandRows{g.T, g.T, nullptr};
}

void AttentionCore::dropout_backward(const BatchGeometry& g, int64_t Tq, const Pass& pass, const QueryRows* rows) {
  const TensorView<float> d_probs = scores_view(scratch_.d_probs, Extents{g.B, g.T}, Tq);
  dropout_apply_rows(d_probs.data(), d_probs.data(), g.B * H_ * Tq, d_probs.size(3),
                     rows ? score_rows_.data() : nullptr, spec_->attention_dropout, pass.seed,
                     dropout_stream(DropoutSite::attention_probs, layer_, pass));
}

const int32_t* AttentionCore::score_rows(const BatchGeometry& g, const QueryRows* rows) {
  if (!rows) return nullptr;
  const int64_t Tq = rows->Tq;
  LF_CHECK(score_rows_.capacity() >= static_cast<size_t>(g.B * H_ * Tq),
           "attention layer {}: no room for {} score rows", layer_, g.B * H_ * Tq);
  score_rows_.resize(static_cast<size_t>(g.B * H_ * Tq));  // within the reserved capacity: no allocation
  for (int64_t b = 0; b < g.B; ++b)
    for (int64_t h = 0; h < H_; ++h)
      for (int64_t j = 0; j < Tq; ++j)
        score_rows_[static_cast<size_t>((b * H_ + h) * Tq + j)] =
            static_cast<int32_t>((b * H_ + h) * g.T + (rows->source[b * Tq + j] - b * g.T));
  return score_rows_.data();
}

}  // namespace linformer

#include "linformer/layers/feed_forward.h"

#include "linformer/kernels/activation.h"
#include "linformer/kernels/dropout.h"

#include <algorithm>

namespace linformer {

void FeedForward::declare(ParameterTable& table, const ModelSpec& spec, int layer) {
  Linear::declare(table, prefix(layer) + "fc1", spec.ffn_dim, spec.d_model);
  Linear::declare(table, prefix(layer) + "fc2", spec.d_model, spec.ffn_dim);
}

double FeedForward::forward_flops(const ModelSpec& spec, double rows) {
  return Linear::forward_flops(rows, spec.ffn_dim, spec.d_model) +
         Linear::forward_flops(rows, spec.d_model, spec.ffn_dim);
}

FeedForward::FeedForward(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_rows)
    : ws_(ws), layer_(layer), activation_dropout_(spec.activation_dropout) {
  fc1_ = Linear(params, prefix(layer) + "fc1");
  fc2_ = Linear(params, prefix(layer) + "fc2");
  chunk_rows_ = ws.inference() ? std::min(max_rows, kInferenceChunkRows) : max_rows;
  // (rows, F): the rows of a chunk (all of the batch's B·T rows when training).
  pre_ = ws.reserve_cache(layer, "ffn.pre", {Dim::rows(chunk_rows_), spec.ffn_dim});
  d_act_ = ws.reserve_backward("ffn.d_act", {Dim::rows(max_rows), spec.ffn_dim});
  fc1_.reserve_bf16_operands(ws, Dim::rows(max_rows));
  fc2_.reserve_bf16_operands(ws, Dim::rows(max_rows));
  // Backward needs GELU's input; inference applies GELU in place. On the bf16 path without
  // activation dropout GELU's output exists only in bf16, in fc2's cache: no f32 buffer for it.
  const bool only_bf16 = fc2_.keeps_bf16_caches() && activation_dropout_ == 0;
  if (ws.inference())
    act_ = pre_;
  else if (!only_bf16)
    act_ = ws.reserve_cache(layer, "ffn.act", {Dim::rows(chunk_rows_), spec.ffn_dim});
}

void FeedForward::forward(TensorView<const float> x, TensorView<float> y, const Pass& pass, bool x_rounded,
                          const int32_t* row_index) {
  const int64_t total = x.size(0);
  LF_CHECK(!pass.training || total <= chunk_rows_, "feed-forward training pass of {} rows, built for {}", total,
           chunk_rows_);
  LF_CHECK(!x_rounded || total <= chunk_rows_, "feed-forward: a rounded input of {} rows, chunks of {}", total,
           chunk_rows_);
  for (int64_t begin = 0; begin < total; begin += chunk_rows_) {
    const int64_t end = std::min(total, begin + chunk_rows_), rows = end - begin;
    const TensorView<float> pre = ws_.view(pre_, Extents::rows(rows));
    if (x_rounded)
      fc1_.forward_rounded(pre);
    else
      fc1_.forward(x.slice(0, begin, end), pre);
    // bf16 path without activation dropout: GELU writes fc2's bf16 operand itself.
    const TensorView<bf16> act_bf16 = fc2_.input_bf16(rows);  // (rows, F)
    fused_bf16_ = act_bf16.data() != nullptr && !(pass.training && activation_dropout_ > 0);
    if (fused_bf16_) {
      if (ws_.inference())
        gelu_forward_bf16(pre.data(), act_bf16.data(), act_bf16.numel());
      else
        gelu_forward_bf16_keeping_derivative(pre.data(), act_bf16.data(), act_bf16.numel());
      fc2_.forward_rounded(y.slice(0, begin, end));
      continue;
    }
    LF_CHECK(act_, "layer {}: this feed-forward was built for bf16 matmuls, which are now off", layer_);
    const TensorView<float> act = ws_.view(act_, Extents::rows(rows));
    if (ws_.inference())
      gelu_forward(pre.data(), act.data(), act.numel());  // in place
    else
      gelu_forward_keeping_derivative(pre.data(), act.data(), act.numel());
    if (pass.training)
      dropout_apply_rows(act.data(), act.data(), rows, act.size(1), row_index ? row_index + begin : nullptr,
                         activation_dropout_, pass.seed, dropout_stream(DropoutSite::activation, layer_, pass));
    fc2_.forward(act, y.slice(0, begin, end));
  }
}

void FeedForward::backward(TensorView<const float> x, TensorView<const float> dy, TensorView<float> dx,
                           const Pass& pass, const int32_t* row_index) {
  const Extents r = Extents::rows(x.size(0));
  // In the forward pass: y = fc2(act), act = dropout(gelu(pre)), pre = fc1(x); pre's cache then
  // holds gelu'(pre).
  const TensorView<float> gelu_derivative = ws_.view(pre_, r), d_act = ws_.view(d_act_, r);
  if (fused_bf16_) {  // act exists only as fc2's bf16 input; no dropout
    convert_to_bf16(dy, fc2_.output_gradient_bf16(r.N).data());
    fc2_.backward_rounded(dy, d_act);
    // GELU's gradient only rounded, fc1's bias gradient from the same pass.
    gelu_backward_bf16_column_sums(d_act.data(), gelu_derivative.data(), fc1_.output_gradient_bf16(r.N).data(),
                                   d_act.size(0), d_act.size(1), fc1_.db.data());
    fc1_.backward_rounded(d_act, dx, Accumulate::overwrite, /*with_bias=*/false);  // d_act: only its row count
    return;
  }
  const TensorView<float> act = ws_.view(act_, r);
  fc2_.backward(dy, act, d_act);
  if (pass.training)
    dropout_apply_rows(d_act.data(), d_act.data(), d_act.size(0), d_act.size(1), row_index, activation_dropout_,
                       pass.seed, dropout_stream(DropoutSite::activation, layer_, pass));
  gelu_backward(d_act.data(), gelu_derivative.data(), d_act.data(), d_act.numel());
  fc1_.backward(d_act, x, dx);
}

}  // namespace linformer

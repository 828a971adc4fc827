#include "linformer/model/encoder.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>

namespace linformer {

void Encoder::declare(ParameterTable& table, const ModelSpec& spec) {
  spec.validate();  // the layers index k_per_layer and divide by heads
  Embedding::declare(table, spec);
  Attention::declare_shared(table, spec);
  for (int l = 0; l < spec.layers; ++l) EncoderBlock::declare(table, spec, l);
  if (spec.norm == config::NormPlacement::pre) LayerNorm::declare(table, "final_ln", spec.d_model);
}

double Encoder::forward_flops(const ModelSpec& spec, int64_t B, int64_t T, int64_t last_rows) {
  double flops = 0;
  for (int l = 0; l < spec.layers; ++l)
    flops += EncoderBlock::forward_flops(spec, l, B, T, l == spec.layers - 1 && last_rows > 0 ? last_rows : T);
  return flops;
}

std::vector<std::string> Encoder::stage_names(const ModelSpec& spec) {
  std::vector<std::string> names{"embedding"};
  for (int l = 0; l < spec.layers; ++l) names.push_back("block " + std::to_string(l));
  if (spec.norm == config::NormPlacement::pre) names.push_back("final_ln");
  return names;
}

Encoder::Encoder(const ModelSpec& spec, const Parameters& params, Workspace& ws, int64_t max_batch, StageTimer& timer)
    : spec_(spec), ws_(ws), timer_(timer) {
  LF_CHECK(max_batch > 0, "model capacity: batch {} must be positive", max_batch);
  const Dim B = Dim::batch(max_batch), T = Dim::tokens(spec.seq_len);
  const int64_t C = spec.d_model;
  embedding_ = std::make_unique<Embedding>(spec_, params, ws, max_batch);
  for (int l = 0; l < spec.layers; ++l)
    blocks_.push_back(std::make_unique<EncoderBlock>(spec_, params, ws, l, max_batch));
  for (int l = 0; l <= spec.layers; ++l)
    hidden_.push_back(ws.inference() ? ws.reserve_shared(l % 2 ? "hidden.odd" : "hidden.even", {B, T, C})
                                     : ws.reserve("hidden" + std::to_string(l), {B, T, C}));
  if (spec.norm == config::NormPlacement::pre) {
    final_ln_ = std::make_unique<LayerNorm>(params, "final_ln");
    final_ = ws.reserve("final", {B, T, C});
    final_mean_ = ws.reserve("final.mean", {B, T});
    final_rstd_ = ws.reserve("final.rstd", {B, T});
  }
  d_hidden_a_ = ws.reserve_backward("d_hidden.a", {B, T, C});
  d_hidden_b_ = ws.reserve_backward("d_hidden.b", {B, T, C});
  key_valid_capacity_ = max_batch * spec.seq_len;
  block_grads_begin_.assign(static_cast<size_t>(spec.layers), std::numeric_limits<size_t>::max());
  for (const auto& entry : params.grads().layout().entries()) {
    int layer = -1;
    if (std::sscanf(entry.name.c_str(), "layers.%d.", &layer) == 1 && layer >= 0 && layer < spec.layers)
      block_grads_begin_[layer] = std::min(block_grads_begin_[layer], entry.offset);
  }
}

void Encoder::allocate_padding_mask() { key_valid_.resize(static_cast<size_t>(key_valid_capacity_)); }

TensorView<const float> Encoder::forward(int64_t B, int64_t T, const int32_t* ids, const int32_t* lengths,
                                         const Pass& pass, const QueryRows* last_rows) {
  LF_CHECK(static_cast<int64_t>(key_valid_.size()) >= B * T, "the encoder's padding mask is not allocated");
  LF_CHECK(!last_rows || (selects_last_queries() && last_rows->Tq >= 1 && last_rows->Tq <= T),
           "the encoder's last block cannot compute {} rows a sequence of {}", last_rows ? last_rows->Tq : 0, T);
  geometry_ = {B, T, lengths};
  last_rows_ = last_rows;
  output_T_ = last_rows ? last_rows->Tq : T;
  const int64_t C = spec_.d_model, rows = B * output_T_;
  const Extents e{B, T}, out{B, output_T_};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) key_valid_[b * T + t] = t < lengths[b];

  // The bf16 path of training, post-LN: the kernel that makes a block's input also writes its
  // rounding into the block's attention input cache (empty views elsewhere).
  const auto input_bf16 = [&](int l) {
    return l < spec_.layers ? blocks_[l]->input_bf16(geometry_) : TensorView<bf16>{};
  };
  size_t stage = 0;
  bool rounded = false;  // whether hidden[l]'s rounding is in block l's input cache
  timer_.forward(stage++,
                 [&] { rounded = embedding_->forward(geometry_, ids, ws_.view(hidden_[0], e), pass, input_bf16(0)); });
  for (int l = 0; l < spec_.layers; ++l)
    timer_.forward(stage++, [&] {
      const TensorView<bf16> next_bf16 = input_bf16(l + 1);
      const bool last = l == spec_.layers - 1;
      blocks_[l]->forward(geometry_, ws_.view(hidden_[l], e), ws_.view(hidden_[l + 1], last ? out : e),
                          key_valid_.data(), pass, rounded, next_bf16, last ? last_rows : nullptr);
      rounded = next_bf16.data() != nullptr;
    });
  if (final_ln_)
    timer_.forward(stage++, [&] {
      final_ln_->forward(ws_.view(hidden_[spec_.layers], out).reshape(Shape{rows, C}),
                         ws_.view(final_, out).reshape(Shape{rows, C}), ws_.view(final_mean_, out).data(),
                         ws_.view(final_rstd_, out).data());
    });
  return output();
}

TensorView<const float> Encoder::output() const {
  const Extents out{geometry_.B, output_T_};
  return final_ln_ ? ws_.view(final_, out) : ws_.view(hidden_[spec_.layers], out);
}

TensorView<float> Encoder::output_gradient() const { return ws_.view(d_hidden_a_, {geometry_.B, output_T_}); }

std::vector<size_t> Encoder::gradients_final_offsets() const {
  std::vector<size_t> offsets(block_grads_begin_.rbegin(), block_grads_begin_.rend());
  offsets.push_back(0);
  return offsets;
}

void Encoder::backward(const int32_t* ids, const Pass& pass, const GradientsFinalFrom& final_from) {
  const int64_t C = spec_.d_model, rows = geometry_.B * output_T_;
  const Extents e{geometry_.B, geometry_.T}, out{geometry_.B, output_T_};
  TensorView<float> d_cur = output_gradient(), d_next = ws_.view(d_hidden_b_, out);
  size_t stage = stage_names(spec_).size() - 1;
  if (final_ln_) {
    // final = LN(hidden[L]).
    timer_.backward(stage--, [&] {
      final_ln_->backward(d_cur.reshape(Shape{rows, C}), ws_.view(hidden_[spec_.layers], out).reshape(Shape{rows, C}),
                          ws_.view(final_mean_, out).data(), ws_.view(final_rstd_, out).data(),
                          d_next.reshape(Shape{rows, C}));
    });
    std::swap(d_cur, d_next);
  }
  for (int l = spec_.layers - 1; l >= 0; --l) {
    const bool last = l == spec_.layers - 1;
    // Every block's dx has all T rows (the last one's dy may have Tq).
    d_next = ws_.view(d_cur.data() == ws_.view(d_hidden_a_, e).data() ? d_hidden_b_ : d_hidden_a_, e);
    timer_.backward(stage--, [&] {
      blocks_[l]->backward(geometry_, ws_.view(hidden_[l], e), d_cur, d_next, pass, last ? last_rows_ : nullptr);
    });
    std::swap(d_cur, d_next);
    if (final_from) final_from(block_grads_begin_[l]);
  }
  timer_.backward(stage, [&] { embedding_->backward(geometry_, ids, d_cur, pass); });
  if (final_from) final_from(0);
}

}  // namespace linformer

#include "linformer/model/mlm_model.h"

#include <algorithm>

#include <chrono>

namespace linformer {

void StageTimes::reset() {
  std::fill(forward_seconds.begin(), forward_seconds.end(), 0.0);
  std::fill(backward_seconds.begin(), backward_seconds.end(), 0.0);
}

template <class Body>
void MlmModel::timed(std::vector<double>& seconds, size_t index, Body&& body) {
  if (!timing_) return body();
  const auto start = std::chrono::steady_clock::now();
  body();
  seconds[index] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

ParameterTable MlmModel::parameter_table(const ModelSpec& spec) {
  spec.validate();  // the layers index k_per_layer and divide by heads
  ParameterTable table;
  Embedding::declare(table, spec);
  Attention::declare_shared(table, spec);
  for (int l = 0; l < spec.layers; ++l) EncoderBlock::declare(table, spec, l);
  if (spec.norm == config::NormPlacement::pre) LayerNorm::declare(table, "final_ln", spec.d_model);
  MlmHead::declare(table, spec);
  return table;
}

double MlmModel::forward_matmul_flops(const ModelSpec& spec, int64_t B, int64_t T, int64_t M) {
  double flops = 0;
  for (int l = 0; l < spec.layers; ++l) flops += EncoderBlock::forward_flops(spec, l, B, T);
  return flops + MlmHead::forward_flops(spec, static_cast<double>(M));
}

MlmModel::MlmModel(const ModelSpec& spec, int64_t max_batch, int64_t max_masked, WorkspaceUse use)
    : MlmModel(spec, max_batch, max_masked, use, PlanOnly{}) {
  ws_.allocate();
  key_valid_.resize(static_cast<size_t>(max_batch * spec.seq_len));  // (B·n): not in a plan, which allocates nothing
}

size_t MlmModel::planned_activation_bytes(const ModelSpec& spec, int64_t max_batch, int64_t max_masked,
                                          WorkspaceUse use) {
  return MlmModel(spec, max_batch, max_masked, use, PlanOnly{}).ws_.planned_bytes();
}

MlmModel::MlmModel(const ModelSpec& spec, int64_t max_batch, int64_t max_masked, WorkspaceUse use, PlanOnly)
    : spec_(spec), max_batch_(max_batch), max_masked_(max_masked), params_(spec, parameter_table(spec)), ws_(use) {
  LF_CHECK(max_batch > 0 && max_masked > 0, "model capacity: batch {} and masked positions {} must be positive",
           max_batch, max_masked);
  const int64_t rows = max_batch * spec.seq_len, C = spec.d_model;
  embedding_ = std::make_unique<Embedding>(spec_, params_, ws_, max_batch);
  for (int l = 0; l < spec.layers; ++l) blocks_.push_back(std::make_unique<EncoderBlock>(spec_, params_, ws_, l, max_batch));
  for (int l = 0; l <= spec.layers; ++l)
    hidden_.push_back(ws_.inference() ? ws_.reserve_shared(l % 2 ? "hidden.odd" : "hidden.even", rows * C)
                                      : ws_.reserve("hidden" + std::to_string(l), rows * C));
  final_ = final_mean_ = final_rstd_ = -1;
  if (spec.norm == config::NormPlacement::pre) {
    final_ln_ = std::make_unique<LayerNorm>(params_, "final_ln");
    final_ = ws_.reserve("final", rows * C);
    final_mean_ = ws_.reserve("final.mean", rows);
    final_rstd_ = ws_.reserve("final.rstd", rows);
  }
  head_ = std::make_unique<MlmHead>(spec_, params_, ws_, max_masked);
  d_hidden_a_ = ws_.reserve_backward("d_hidden.a", rows * C);
  d_hidden_b_ = ws_.reserve_backward("d_hidden.b", rows * C);
  stage_times_.names.push_back("embedding");
  for (int l = 0; l < spec.layers; ++l) stage_times_.names.push_back("block " + std::to_string(l));
  if (final_ln_) stage_times_.names.push_back("final_ln");
  stage_times_.names.push_back("mlm head + loss");
  stage_times_.forward_seconds.assign(stage_times_.names.size(), 0.0);
  stage_times_.backward_seconds.assign(stage_times_.names.size(), 0.0);
}

void MlmModel::check_batch(const MlmBatchView& b) const {
  LF_CHECK(b.B >= 1 && b.B <= max_batch_, "batch of {} sequences; the model was built for at most {}", b.B, max_batch_);
  LF_CHECK(b.T >= 1 && b.T <= spec_.seq_len, "batch rows of {} tokens; the model has {} positions", b.T, spec_.seq_len);
  LF_CHECK(b.M >= 1 && b.M <= max_masked_, "{} masked positions; the model was built for 1 to {}", b.M, max_masked_);
  for (int64_t r = 0; r < b.B; ++r)
    LF_CHECK(b.lengths[r] >= 1 && b.lengths[r] <= b.T, "row {} has length {} (T = {})", r, b.lengths[r], b.T);
  for (int64_t i = 0; i < b.B * b.T; ++i)
    LF_CHECK(b.ids[i] >= 0 && b.ids[i] < spec_.vocab_size, "token id {} at position {} is outside the vocabulary of {}",
             b.ids[i], i, spec_.vocab_size);
  for (int64_t m = 0; m < b.M; ++m) {
    const int32_t p = b.masked_positions[m];
    LF_CHECK(p >= 0 && p < b.B * b.T && p % b.T < b.lengths[p / b.T],
             "masked position {} is not a real token of the batch", p);
    LF_CHECK(b.targets[m] >= 0 && b.targets[m] < spec_.vocab_size, "target id {} is outside the vocabulary",
             b.targets[m]);
  }
}

StepResult MlmModel::run_forward(const MlmBatchView& batch, const Pass& pass, float grad_scale) {
  check_batch(batch);
  LF_CHECK(!(pass.training && ws_.inference()), "an inference model cannot run a training pass (dropout)");
  geometry_ = {batch.B, batch.T, batch.lengths};
  last_masked_ = batch.M;
  const int64_t C = spec_.d_model;
  const Shape shaped{batch.B, batch.T, C};
  for (int64_t b = 0; b < batch.B; ++b)
    for (int64_t t = 0; t < batch.T; ++t) key_valid_[b * batch.T + t] = t < batch.lengths[b];

  auto& seconds = stage_times_.forward_seconds;
  size_t stage = 0;
  timed(seconds, stage++, [&] { embedding_->forward(geometry_, batch.ids, ws_.view(hidden_[0], shaped), pass); });
  for (int l = 0; l < spec_.layers; ++l)
    timed(seconds, stage++, [&] {
      blocks_[l]->forward(geometry_, ws_.view(hidden_[l], shaped), ws_.view(hidden_[l + 1], shaped),
                          key_valid_.data(), pass);
    });
  TensorView<float> out = ws_.view(hidden_[spec_.layers], shaped);
  if (final_ln_) {
    const int64_t rows = geometry_.rows();
    timed(seconds, stage++, [&] {
      final_ln_->forward(out.reshape(Shape{rows, C}), ws_.view(final_, Shape{rows, C}),
                         ws_.view(final_mean_, Shape{rows}).data(), ws_.view(final_rstd_, Shape{rows}).data());
    });
    out = ws_.view(final_, shaped);
  }
  CrossEntropyResult ce;
  timed(seconds, stage++, [&] {
    ce = head_->forward(out.reshape(Shape{geometry_.rows(), C}), batch.masked_positions, batch.targets, batch.M,
                        grad_scale);
  });
  return {ce.loss_sum, ce.correct, batch.M};
}

StepResult MlmModel::forward(const MlmBatchView& batch, const Pass& pass) { return run_forward(batch, pass, 0.0f); }

StepResult MlmModel::forward_backward(const MlmBatchView& batch, const Pass& pass, float grad_scale) {
  LF_CHECK(grad_scale != 0.0f, "forward_backward needs a non-zero gradient scale");
  LF_CHECK(!ws_.inference(), "forward_backward on an inference model (it keeps no activations for backward)");
  const StepResult result = run_forward(batch, pass, grad_scale);
  const int64_t C = spec_.d_model, rows = geometry_.rows();
  const Shape shaped{batch.B, batch.T, C};
  TensorView<float> d_cur = ws_.view(d_hidden_a_, shaped), d_next = ws_.view(d_hidden_b_, shaped);

  auto& seconds = stage_times_.backward_seconds;
  size_t stage = stage_times_.names.size() - 1;
  timed(seconds, stage--, [&] { head_->backward(d_cur.reshape(Shape{rows, C}), batch.masked_positions, batch.M); });
  if (final_ln_) {
    // final = LN(hidden[L]).
    timed(seconds, stage--, [&] {
      final_ln_->backward(d_cur.reshape(Shape{rows, C}), ws_.view(hidden_[spec_.layers], Shape{rows, C}),
                          ws_.view(final_mean_, Shape{rows}).data(), ws_.view(final_rstd_, Shape{rows}).data(),
                          d_next.reshape(Shape{rows, C}));
    });
    std::swap(d_cur, d_next);
  }
  for (int l = spec_.layers - 1; l >= 0; --l) {
    timed(seconds, stage--, [&] { blocks_[l]->backward(geometry_, ws_.view(hidden_[l], shaped), d_cur, d_next, pass); });
    std::swap(d_cur, d_next);
  }
  timed(seconds, stage, [&] { embedding_->backward(geometry_, batch.ids, d_cur, pass); });
  return result;
}

TensorView<const float> MlmModel::logits() const { return head_->logits(last_masked_); }

TensorView<const float> MlmModel::encoder_output() const {
  const Shape shaped{geometry_.B, geometry_.T, spec_.d_model};
  return final_ln_ ? ws_.view(final_, shaped) : ws_.view(hidden_[spec_.layers], shaped);
}

}  // namespace linformer

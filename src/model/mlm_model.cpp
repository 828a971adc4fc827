#include "linformer/model/mlm_model.h"

#include <algorithm>

namespace linformer {

ParameterTable MlmModel::parameter_table(const ModelSpec& spec) {
  ParameterTable table;
  Encoder::declare(table, spec);
  MlmHead::declare(table, spec);
  return table;
}

double MlmModel::forward_matmul_flops(const ModelSpec& spec, int64_t B, int64_t T, int64_t M, int64_t last_rows) {
  return Encoder::forward_flops(spec, B, T, last_rows) + MlmHead::forward_flops(spec, static_cast<double>(M));
}

MlmModel::MlmModel(const ModelSpec& spec, int64_t max_batch, int64_t max_masked, WorkspaceUse use)
    : MlmModel(spec, max_batch, max_masked, use, PlanOnly{}) {
  ws_.allocate();
  encoder_.allocate_padding_mask();  // not in a plan, which allocates nothing
}

size_t MlmModel::planned_activation_bytes(const ModelSpec& spec, int64_t max_batch, int64_t max_masked,
                                          WorkspaceUse use) {
  return MlmModel(spec, max_batch, max_masked, use, PlanOnly{}).ws_.planned_bytes();
}

MlmModel::MlmModel(const ModelSpec& spec, int64_t max_batch, int64_t max_masked, WorkspaceUse use, PlanOnly)
    : spec_(spec),
      max_batch_(max_batch),
      max_masked_(max_masked),
      params_(spec, parameter_table(spec)),
      ws_(use),
      timer_(stage_names(spec)),
      encoder_(spec_, params_, ws_, max_batch, timer_) {
  LF_CHECK(max_batch > 0 && max_masked > 0, "model capacity: batch {} and masked positions {} must be positive",
           max_batch, max_masked);
  head_ = std::make_unique<MlmHead>(spec_, params_, ws_, max_masked);
}

std::vector<std::string> MlmModel::stage_names(const ModelSpec& spec) {
  std::vector<std::string> names = Encoder::stage_names(spec);
  names.push_back("mlm head + loss");
  return names;
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

StepResult MlmModel::run_forward(const MlmBatchView& batch, const Pass& pass, float grad_scale,
                                 const QueryRows* last_rows) {
  LF_CHECK(!(pass.training && ws_.inference()), "an inference model cannot run a training pass (dropout)");
  last_masked_ = batch.M;
  const TensorView<const float> out = encoder_.forward(batch.B, batch.T, batch.ids, batch.lengths, pass, last_rows);
  const int32_t* positions = last_rows ? head_positions_.data() : batch.masked_positions;
  CrossEntropyResult ce;
  timer_.forward(head_stage(), [&] {
    ce = head_->forward(out.reshape(Shape{out.size(0) * out.size(1), spec_.d_model}), positions, batch.targets, batch.M,
                        grad_scale);
  });
  return {ce.loss_sum, ce.correct, batch.M};
}

namespace {
// The last block's rows per sequence: the most masked tokens of a sequence rounded up to a multiple
// of 8 or T/32, whichever is larger. Every new count builds (and keeps) the last block's own oneDNN
// primitives, so there are at most 32 counts (a 512-token batch at 15% masking sees two or three).
int64_t last_rows_quantum(int64_t T) { return std::max<int64_t>(8, T / 32); }
}  // namespace

const QueryRows* MlmModel::select_last_rows(const MlmBatchView& batch) {
  if (every_row_ || !encoder_.selects_last_queries()) return nullptr;
  per_sequence_.assign(static_cast<size_t>(batch.B), 0);
  for (int64_t m = 0; m < batch.M; ++m) ++per_sequence_[static_cast<size_t>(batch.masked_positions[m] / batch.T)];
  const int64_t most = *std::max_element(per_sequence_.begin(), per_sequence_.end());
  const int64_t quantum = last_rows_quantum(batch.T);
  const int64_t Tq = std::max<int64_t>(1, (most + quantum - 1) / quantum) * quantum;
  if (Tq >= batch.T) return nullptr;  // nothing to save
  // Row j < count of sequence b: its j-th masked token; the rest: its first token (always real).
  query_source_.resize(static_cast<size_t>(batch.B * Tq));
  for (int64_t b = 0; b < batch.B; ++b)
    std::fill_n(query_source_.begin() + b * Tq, Tq, static_cast<int32_t>(b * batch.T));
  head_positions_.resize(static_cast<size_t>(batch.M));
  std::fill(per_sequence_.begin(), per_sequence_.end(), 0);
  for (int64_t m = 0; m < batch.M; ++m) {
    const int32_t p = batch.masked_positions[m];
    const int64_t b = p / batch.T, row = b * Tq + per_sequence_[static_cast<size_t>(b)]++;
    query_source_[static_cast<size_t>(row)] = p;
    head_positions_[static_cast<size_t>(m)] = static_cast<int32_t>(row);
  }
  last_rows_ = {Tq, query_source_.data()};
  return &last_rows_;
}

StepResult MlmModel::forward(const MlmBatchView& batch, const Pass& pass) {
  check_batch(batch);
  return run_forward(batch, pass, 0.0f);
}

StepResult MlmModel::forward_backward(const MlmBatchView& batch, const Pass& pass, float grad_scale,
                                      const GradientsFinalFrom& final_from) {
  LF_CHECK(grad_scale != 0.0f, "forward_backward needs a non-zero gradient scale");
  LF_CHECK(!ws_.inference(), "forward_backward on an inference model (it keeps no activations for backward)");
  check_batch(batch);
  const QueryRows* last_rows = select_last_rows(batch);
  last_block_rows_ = last_rows ? last_rows->Tq : batch.T;
  const StepResult result = run_forward(batch, pass, grad_scale, last_rows);
  const TensorView<float> d_out = encoder_.output_gradient();
  const int32_t* positions = last_rows ? head_positions_.data() : batch.masked_positions;
  timer_.backward(head_stage(), [&] {
    head_->backward(d_out.reshape(Shape{d_out.size(0) * d_out.size(1), spec_.d_model}), positions, batch.M);
  });
  encoder_.backward(batch.ids, pass, final_from);
  return result;
}

TensorView<const float> MlmModel::logits() const { return head_->logits(last_masked_); }

TensorView<const float> MlmModel::encoder_output() const { return encoder_.output(); }

}  // namespace linformer

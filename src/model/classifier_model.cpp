#include "linformer/model/classifier_model.h"

namespace linformer {

ParameterTable ClassifierModel::parameter_table(const ModelSpec& spec, int64_t labels, bool freeze_encoder) {
  ParameterTable encoder;
  Encoder::declare(encoder, spec);
  ParameterTable table;
  for (const auto& p : encoder.entries()) table.add(p.name, p.shape, p.init, p.decay, p.trainable && !freeze_encoder);
  ClassificationHead::declare(table, spec.d_model, labels);
  return table;
}

double ClassifierModel::forward_matmul_flops(const ModelSpec& spec, int64_t B, int64_t T, int64_t labels) {
  return Encoder::forward_flops(spec, B, T) +
         ClassificationHead::forward_flops(static_cast<double>(B), spec.d_model, static_cast<double>(labels));
}

size_t ClassifierModel::planned_activation_bytes(const ModelSpec& spec, int64_t labels, int64_t max_batch,
                                                 WorkspaceUse use) {
  return ClassifierModel(spec, labels, max_batch, 0.0f, false, use, PlanOnly{}).ws_.planned_bytes();
}

ClassifierModel::ClassifierModel(const ModelSpec& spec, int64_t labels, int64_t max_batch, float classifier_dropout,
                                 bool freeze_encoder, WorkspaceUse use)
    : ClassifierModel(spec, labels, max_batch, classifier_dropout, freeze_encoder, use, PlanOnly{}) {
  ws_.allocate();
  encoder_.allocate_padding_mask();
}

ClassifierModel::ClassifierModel(const ModelSpec& spec, int64_t labels, int64_t max_batch, float classifier_dropout,
                                 bool freeze_encoder, WorkspaceUse use, PlanOnly)
    : spec_(spec),
      labels_(labels),
      max_batch_(max_batch),
      freeze_encoder_(freeze_encoder),
      params_(spec, parameter_table(spec, labels, freeze_encoder)),
      ws_(use),
      timer_([&] {
        auto names = Encoder::stage_names(spec);
        names.push_back("classifier + loss");
        return names;
      }()),
      encoder_(spec_, params_, ws_, max_batch, timer_),
      head_(params_, ws_, max_batch, classifier_dropout) {
  LF_CHECK(labels >= 2, "a classifier of {} labels: needs at least two", labels);
}

void ClassifierModel::check_batch(const ClassifierBatchView& b) const {
  LF_CHECK(b.B >= 1 && b.B <= max_batch_, "batch of {} documents; the model was built for at most {}", b.B, max_batch_);
  LF_CHECK(b.T >= 1 && b.T <= spec_.seq_len, "documents of {} tokens; the model has {} positions", b.T, spec_.seq_len);
  for (int64_t r = 0; r < b.B; ++r) {
    LF_CHECK(b.lengths[r] >= 1 && b.lengths[r] <= b.T, "row {} has length {} (T = {})", r, b.lengths[r], b.T);
    LF_CHECK(b.labels[r] >= 0 && b.labels[r] < labels_, "row {} has label id {}; the model has {} labels", r,
             b.labels[r], labels_);
  }
  for (int64_t i = 0; i < b.B * b.T; ++i)
    LF_CHECK(b.ids[i] >= 0 && b.ids[i] < spec_.vocab_size, "token id {} at position {} is outside the vocabulary of {}",
             b.ids[i], i, spec_.vocab_size);
}

ClassifierResult ClassifierModel::run_forward(const ClassifierBatchView& batch, const Pass& pass, float grad_scale) {
  check_batch(batch);
  LF_CHECK(!(pass.training && ws_.inference()), "an inference model cannot run a training pass (dropout)");
  last_batch_ = batch.B;
  const TensorView<const float> out = encoder_.forward(batch.B, batch.T, batch.ids, batch.lengths, pass);
  CrossEntropyResult ce;
  timer_.forward(timer_.times().names.size() - 1, [&] { ce = head_.forward(out, batch.labels, grad_scale, pass); });
  return {ce.loss_sum, ce.correct, batch.B};
}

ClassifierResult ClassifierModel::forward(const ClassifierBatchView& batch, const Pass& pass) {
  return run_forward(batch, pass, 0.0f);
}

ClassifierResult ClassifierModel::forward_backward(const ClassifierBatchView& batch, const Pass& pass,
                                                   float grad_scale) {
  LF_CHECK(grad_scale != 0.0f, "forward_backward needs a non-zero gradient scale");
  LF_CHECK(!ws_.inference(), "forward_backward on an inference model (it keeps no activations for backward)");
  const ClassifierResult result = run_forward(batch, pass, grad_scale);
  timer_.backward(timer_.times().names.size() - 1, [&] { head_.backward(encoder_.output_gradient(), pass); });
  if (!freeze_encoder_) encoder_.backward(batch.ids, pass);
  return result;
}

TensorView<const float> ClassifierModel::logits() const { return head_.logits(last_batch_); }

}  // namespace linformer

#include "linformer/finetune/classification_job.h"

#include <fmt/format.h>

#include <cmath>

namespace linformer {

ClassificationJob::ClassificationJob(ClassifierModel& model, const data::LabelledSet& train,
                                     const data::LabelledSet& valid, const config::Recipe& recipe)
    : model_(model),
      valid_(valid),
      recipe_(recipe),
      batches_(train, recipe.train.batch_size, /*shuffle=*/true, static_cast<uint64_t>(recipe.seed)),
      micro_(static_cast<size_t>(recipe.train.accumulation)) {}

int ClassificationJob::read_update(int64_t) {
  for (auto& batch : micro_) batches_.next(batch);
  return static_cast<int>(micro_.size());
}

int64_t ClassificationJob::micro_batch_tokens(int i) const {
  int64_t tokens = 0;
  for (int32_t length : micro_[static_cast<size_t>(i)].lengths) tokens += length;
  return tokens;
}

MicroBatchResult ClassificationJob::train_micro_batch(int i, const Pass& pass, float grad_scale,
                                                      const GradientsFinalFrom&) {
  const data::LabelledBatch& b = micro_[static_cast<size_t>(i)];
  const ClassifierResult r =
      model_.forward_backward({b.rows, b.seq_len, b.ids.data(), b.lengths.data(), b.labels.data()}, pass, grad_scale);
  return {r.loss_sum, r.documents, r.correct};
}

int64_t ClassificationJob::updates_for_epochs(int64_t epochs) const {
  const int64_t batches = epochs * batches_.batches_per_epoch();
  return (batches + recipe_.train.accumulation - 1) / recipe_.train.accumulation;
}

MetricsRow classification_row(const ClassificationScores& s) {
  MetricsRow row;
  row.loss = s.loss();
  row.perplexity = std::exp(row.loss);
  row.accuracy = s.accuracy();
  row.macro_f1 = s.macro_f1();
  return row;
}

JobValidation ClassificationJob::validate() {
  const int64_t limit =
      validation_batch_limit(recipe_.validation, static_cast<int64_t>(recipe_.train.batch_size) * recipe_.data.seq_len);
  last_scores_ = evaluate_classifier(model_, valid_, recipe_.train.batch_size, nullptr, limit);
  JobValidation v;
  v.loss = last_scores_.loss();
  v.scores = classification_row(last_scores_);
  v.log_details = fmt::format("loss {:.4f} | accuracy {:.4f} | macro F1 {:.4f} | {} documents", last_scores_.loss(),
                              last_scores_.accuracy(), last_scores_.macro_f1(), last_scores_.documents);
  return v;
}

}  // namespace linformer

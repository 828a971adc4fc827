#pragma once
// Fine-tuning as a training job (train/training_job.h): the classifier on batches of labelled
// documents, shuffled every epoch; its loss units are documents, and its validation scores every
// validation document (or the first validation.max_batches batches): loss, accuracy, macro F1.

#include "linformer/config/recipe.h"
#include "linformer/data/labelled.h"
#include "linformer/finetune/classification_eval.h"
#include "linformer/model/classifier_model.h"
#include "linformer/train/training_job.h"

#include <vector>

namespace linformer {

class ClassificationJob final : public TrainingJob {
 public:
  // Keeps references: all must outlive the job.
  ClassificationJob(ClassifierModel& model, const data::LabelledSet& train, const data::LabelledSet& valid,
                    const config::Recipe& recipe);

  Parameters& params() override { return model_.params(); }
  std::vector<size_t> gradients_final_offsets() const override { return {}; }
  int read_update(int64_t update) override;
  int64_t micro_batch_units(int i) const override { return micro_[static_cast<size_t>(i)].rows; }
  int64_t micro_batch_tokens(int i) const override;
  MicroBatchResult train_micro_batch(int i, const Pass& pass, float grad_scale,
                                     const GradientsFinalFrom& final_from) override;
  data::BatcherState data_state(int64_t) const override { return batches_.state(); }
  void set_data_state(int64_t, const data::BatcherState& state) override { batches_.set_state(state); }
  uint64_t epochs_done(int64_t) const override { return batches_.state().epoch; }
  int64_t updates_for_epochs(int64_t epochs) const override;
  JobValidation validate() override;

  int64_t batches_per_epoch() const { return batches_.batches_per_epoch(); }
  // The last validation's scores in full (confusion matrix included).
  const ClassificationScores& last_scores() const { return last_scores_; }

 private:
  ClassifierModel& model_;
  const data::LabelledSet& valid_;
  const config::Recipe& recipe_;
  data::LabelledBatcher batches_;
  std::vector<data::LabelledBatch> micro_;  // the update's micro-batches (train.accumulation)
  ClassificationScores last_scores_;
};

// A classification's metrics row: loss, perplexity = exp(loss), accuracy, macro F1.
MetricsRow classification_row(const ClassificationScores& scores);

}  // namespace linformer

#pragma once
// Pretraining as a training job (training_job.h): the masked-LM model on the prepared data's
// batchers (training_data.h); its loss units are masked tokens, and its validation scores the
// valid split with fixed masks against the unigram baseline (and with shuffled words when
// validation.shuffle_words asks).

#include "linformer/config/recipe.h"
#include "linformer/model/evaluator.h"
#include "linformer/model/mlm_model.h"
#include "linformer/train/training_data.h"
#include "linformer/train/training_job.h"

#include <functional>
#include <vector>

namespace linformer {

class MlmJob final : public TrainingJob {
 public:
  // Keeps references: all must outlive the job.
  MlmJob(MlmModel& model, TrainingData& data, const config::Recipe& recipe);

  Parameters& params() override { return model_.params(); }
  std::vector<size_t> gradients_final_offsets() const override { return model_.gradients_final_offsets(); }
  int read_update(int64_t update) override;
  int64_t micro_batch_units(int i) const override { return micro_[static_cast<size_t>(i)].targets(); }
  int64_t micro_batch_tokens(int i) const override;
  MicroBatchResult train_micro_batch(int i, const Pass& pass, float grad_scale,
                                     const GradientsFinalFrom& final_from) override;
  data::BatcherState data_state(int64_t update) const override { return data_.train_batcher(update).state(); }
  void set_data_state(int64_t update, const data::BatcherState& state) override {
    data_.train_batcher(update).set_state(state);
  }
  uint64_t epochs_done(int64_t update) const override;
  int64_t updates_for_epochs(int64_t epochs) const override;
  JobValidation validate() override;

  // The valid split's scores, without a row or a best. Data parallel: each process scores its
  // share of the batches and the sums are added up, so R processes with batch b score the same
  // blocks (validation_batch_limit batches of R·b) as one process with batch R·b.
  // `rearrange` changes each batch before the model reads it (data::shuffle_words).
  EvalResult evaluate(const std::function<void(data::Batch&)>& rearrange = {}) const;

 private:
  MlmModel& model_;
  TrainingData& data_;
  const config::Recipe& recipe_;
  int64_t valid_batches_;           // validation_batch_limit in batches of R × train.batch_size (0: all)
  std::vector<data::Batch> micro_;  // the update's micro-batches
  std::vector<int32_t> positions_;  // (M) int32 copy of a batch's target positions
};

}  // namespace linformer

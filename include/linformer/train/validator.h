#pragma once
// Validation during training: the valid split with fixed masks (the same tokens every time,
// so curves compare across runs), the unigram baseline on those tokens, best tracking in the
// TrainingState (early stopping counts from it), a metrics row and a log line. Shared out
// among the processes of a data-parallel run.

#include "linformer/config/recipe.h"
#include "linformer/model/evaluator.h"
#include "linformer/train/checkpoint.h"
#include "linformer/train/metrics_log.h"
#include "linformer/train/training_data.h"

#include <functional>

namespace linformer {

class Validator {
 public:
  Validator(MlmModel& model, TrainingData& data, const config::Recipe& recipe, MetricsLog& metrics);

  // Validates at state.update; returns whether this is the best validation loss so far.
  bool run(TrainingState& state, double elapsed_seconds);
  // The valid split's scores, without a row or a best. Data parallel: each process scores its
  // share of the batches and the sums are added up, so R processes with batch b score the same
  // blocks (validation.max_batches batches of R·b) as one process with batch R·b.
  // `rearrange` changes each batch before the model reads it (data::shuffle_words).
  EvalResult evaluate(const std::function<void(data::Batch&)>& rearrange = {}) const;
  const EvalResult& last() const { return last_; }
  int64_t last_update() const { return last_update_; }  // −1 before the first

 private:
  MlmModel& model_;
  TrainingData& data_;
  const config::Recipe& recipe_;
  MetricsLog& metrics_;
  EvalResult last_;
  int64_t last_update_ = -1;
};

}  // namespace linformer

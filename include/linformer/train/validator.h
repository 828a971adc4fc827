#pragma once
// Validation during training, for any job (training_job.h): the job scores its validation data
// (pretraining: the valid split with fixed masks, so curves compare across runs; fine-tuning: the
// labelled validation documents); here the best is tracked in the TrainingState (early stopping
// counts from it), and a metrics row and a log line are written.

#include "linformer/config/recipe.h"
#include "linformer/train/checkpoint.h"
#include "linformer/train/metrics_log.h"
#include "linformer/train/run_schedule.h"
#include "linformer/train/training_job.h"

namespace linformer {

class Validator {
 public:
  // Keeps references: all must outlive it.
  Validator(TrainingJob& job, const RunSchedule& schedule, MetricsLog& metrics);

  // Validates at state.update; returns whether this is the best validation loss so far.
  bool run(TrainingState& state, double elapsed_seconds);
  const JobValidation& last() const { return last_; }
  int64_t last_update() const { return last_update_; }  // −1 before the first

 private:
  TrainingJob& job_;
  const RunSchedule& schedule_;
  MetricsLog& metrics_;
  JobValidation last_;
  int64_t last_update_ = -1;
};

}  // namespace linformer

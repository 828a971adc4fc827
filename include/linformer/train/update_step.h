#pragma once
// One optimizer update of any job (training_job.h): its micro-batches (train.accumulation, more
// during a sequence-length warm-up), each loss scaled by 1 / (loss units of the whole update),
// so k micro-batches of b rows are the same update as one batch of k·b rows; then the global
// gradient norm, clipping to optim.clip_norm, the schedule's learning rate and an AdamW step.
//
// Data parallel (core/world.h): the scale is 1 / (loss units of the update on every process),
// the gradients are summed over the processes before the norm, and the result's counts are the
// whole update's; each process reads its own share of the batches (batcher.h).

#include "linformer/config/recipe.h"
#include "linformer/optim/adamw.h"
#include "linformer/train/checkpoint.h"
#include "linformer/train/gradient_sync.h"
#include "linformer/train/run_schedule.h"
#include "linformer/train/training_job.h"

#include <cstdint>
#include <optional>

namespace linformer {

// What one update did, for the interval meter.
struct UpdateResult {
  double loss_sum = 0;  // nats over the update's loss units
  int64_t masked = 0;   // loss units: masked tokens, or documents when fine-tuning
  int64_t correct = 0;
  int64_t tokens = 0;    // real tokens read
  double grad_norm = 0;  // before clipping
  double lr = 0;
  double allreduce_seconds = 0;  // data parallel: wall time the update waited for the gradient sums
};

class UpdateStep {
 public:
  // Keeps references: all must outlive the step.
  // Data parallel: overlap_allreduce sums gradients during the last micro-batch's backward pass.
  UpdateStep(TrainingJob& job, AdamW& optimizer, const config::Recipe& recipe, const RunSchedule& schedule,
             bool overlap_allreduce = false);

  // Runs update state.update + 1; advances state.update, micro_step and tokens.
  UpdateResult run(TrainingState& state);
  // Data parallel: how many allreduces sum an update's gradients.
  size_t gradient_buckets() const {
    return gradient_sync_ && gradient_sync_->overlapping() ? gradient_sync_->buckets() : 1;
  }

 private:
  TrainingJob& job_;
  AdamW& optimizer_;
  const config::Recipe& recipe_;
  const RunSchedule& schedule_;
  std::optional<GradientSync> gradient_sync_;  // data parallel only
};

}  // namespace linformer

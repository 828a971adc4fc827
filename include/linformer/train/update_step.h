#pragma once
// One optimizer update: train.accumulation micro-batches (more during a sequence-length
// warm-up, training_data.h), each loss scaled by 1 / (masked tokens of the whole update), so k
// micro-batches of b rows are the same update as one batch of k·b rows; then the global
// gradient norm, clipping to optim.clip_norm, the schedule's learning rate and an AdamW step.
//
// Data parallel (core/world.h): the scale is 1 / (masked tokens of the update on every process),
// the gradients are summed over the processes before the norm, and the result's counts are the
// whole update's; each process reads its own share of the batches (batcher.h).

#include "linformer/config/recipe.h"
#include "linformer/data/batcher.h"
#include "linformer/model/mlm_model.h"
#include "linformer/optim/adamw.h"
#include "linformer/train/checkpoint.h"
#include "linformer/train/gradient_sync.h"
#include "linformer/train/training_data.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace linformer {

// What one update did, for the interval meter.
struct UpdateResult {
  double loss_sum = 0;  // nats over the update's masked tokens
  int64_t masked = 0;
  int64_t correct = 0;
  int64_t tokens = 0;      // real tokens read
  double grad_norm = 0;    // before clipping
  double lr = 0;
  double allreduce_seconds = 0;  // data parallel: wall time the update waited for the gradient sums
};

class UpdateStep {
 public:
  // Keeps references: all must outlive the step.
  // Data parallel: overlap_allreduce sums gradients during the last micro-batch's backward pass.
  UpdateStep(MlmModel& model, AdamW& optimizer, TrainingData& data, const config::Recipe& recipe,
             bool overlap_allreduce = false);

  // Runs update state.update + 1; advances state.update, micro_step and tokens.
  UpdateResult run(TrainingState& state);
  // Data parallel: how many allreduces sum an update's gradients.
  size_t gradient_buckets() const {
    return gradient_sync_ && gradient_sync_->overlapping() ? gradient_sync_->buckets() : 1;
  }

 private:
  MlmModel& model_;
  AdamW& optimizer_;
  TrainingData& data_;
  const config::Recipe& recipe_;
  std::vector<data::Batch> micro_;  // the update's micro-batches (train.accumulation, or the warm-up's count)
  std::vector<int32_t> positions_;  // (M) int32 copy of a batch's target positions
  std::optional<GradientSync> gradient_sync_;  // data parallel only
};

}  // namespace linformer

#pragma once
// What the training loop (training_loop.h) asks of a job, so that pretraining and fine-tuning
// share one loop and its parts (update step, validator, interval meter, schedule): the model's
// parameters, an update's micro-batches run forward and backward, the training data's cursor,
// and a validation. MlmJob (train/mlm_job.h) pretrains; ClassificationJob
// (finetune/classification_job.h) fine-tunes a classifier.
//
// Loss units are what a job's loss is a mean over: masked tokens (pretraining) or documents
// (fine-tuning). An update's gradient is that of the mean over all its micro-batches' units.

#include "linformer/data/batcher.h"
#include "linformer/layers/pass.h"
#include "linformer/model/encoder.h"
#include "linformer/nn/parameters.h"
#include "linformer/train/metrics_log.h"

#include "linformer/config/recipe.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace linformer {

// The validation's bound in batches of `tokens_per_batch` positions: validation.max_batches or
// the batches validation.max_tokens fills (at least one), the smaller; 0 when neither bounds it.
inline int64_t validation_batch_limit(const config::ValidationConfig& v, int64_t tokens_per_batch) {
  const int64_t by_tokens =
      v.max_tokens > 0 ? std::max<int64_t>(1, (v.max_tokens + tokens_per_batch - 1) / tokens_per_batch) : 0;
  if (v.max_batches == 0) return by_tokens;
  return by_tokens == 0 ? v.max_batches : std::min<int64_t>(v.max_batches, by_tokens);
}

// One micro-batch's sums.
struct MicroBatchResult {
  double loss_sum = 0;  // nats over its loss units
  int64_t units = 0;    // masked tokens or documents
  int64_t correct = 0;  // units predicted right
};

// A validation as the loop needs it: the loss that decides the best, the row's scores (the loop
// fills in the counters, lr and time), and what the log line says after them.
struct JobValidation {
  double loss = 0;
  MetricsRow scores;
  std::string log_details;
};

class TrainingJob {
 public:
  virtual ~TrainingJob() = default;

  virtual Parameters& params() = 0;
  // Data parallel: the offsets backward_pass's listener will hear, in order (MlmModel::
  // gradients_final_offsets); empty when the job cannot overlap the gradient sums with backward.
  virtual std::vector<size_t> gradients_final_offsets() const = 0;

  // Reads the micro-batches of update `update` (counted from 1) from this process's share of the
  // training data; returns how many there are.
  virtual int read_update(int64_t update) = 0;
  // The loss units and real tokens of micro-batch i of the update just read.
  virtual int64_t micro_batch_units(int i) const = 0;
  virtual int64_t micro_batch_tokens(int i) const = 0;
  // Forward and backward of micro-batch i: the gradient of grad_scale · loss_sum ACCUMULATES
  // into params().grads(); `final_from` hears which gradients are final (may be empty).
  virtual MicroBatchResult train_micro_batch(int i, const Pass& pass, float grad_scale,
                                             const GradientsFinalFrom& final_from) = 0;

  // The cursor of the batcher that makes update `update`: where a checkpoint taken before it
  // resumes, and the epoch a metrics row reports.
  virtual data::BatcherState data_state(int64_t update) const = 0;
  virtual void set_data_state(int64_t update, const data::BatcherState& state) = 0;
  // Passes over the training data done once `update` updates are (asked right after it): the
  // epoch of the batcher that makes the next update; 0 during a sequence-length warm-up, whose
  // short blocks are not what train.max_epochs and the *.every_epochs keys count.
  virtual uint64_t epochs_done(int64_t update) const = 0;
  // The updates in which `epochs` passes end, counted from the run's start: train.max_epochs as
  // a length the learning-rate schedule can know.
  virtual int64_t updates_for_epochs(int64_t epochs) const = 0;

  // Scores the validation data (dropout off; data parallel: every process's share summed).
  virtual JobValidation validate() = 0;
};

}  // namespace linformer

#pragma once
// Every "when" of a training run in one place: when to write a log line, validate, checkpoint,
// and stop (train.max_updates / max_epochs / max_tokens / max_minutes, early stopping,
// SIGINT/SIGTERM/SIGHUP), and the learning rate of each update. The same for every job
// (training_job.h): epochs are the job's passes over its training data.
// Data-parallel training must take these decisions identically on every rank: this is where.

#include "linformer/config/recipe.h"
#include "linformer/train/checkpoint.h"
#include "linformer/train/training_job.h"

#include <chrono>
#include <cstdint>
#include <string>

namespace linformer {

// Training wall time, summed over the sessions of a run (checkpoints carry the sum).
class RunClock {
 public:
  explicit RunClock(double seconds_before) : before_(seconds_before), start_(std::chrono::steady_clock::now()) {}
  double elapsed() const {
    return before_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  double before_;
  std::chrono::steady_clock::time_point start_;
};

class RunSchedule {
 public:
  // Keeps references to both.
  RunSchedule(const config::Recipe& recipe, const TrainingJob& job);

  // The learning-rate schedule's length: train.max_updates, or the updates of train.max_epochs
  // when that comes first (0: neither is set).
  int64_t length() const { return length_; }
  double learning_rate(int64_t update) const;

  bool log_now(int64_t update) const { return update % recipe_.logging.every == 0; }
  // Every validation.every updates, and at the end of every validation.every_epochs epochs.
  bool validate_now(int64_t update) const;
  // The second kind only.
  bool validates_epoch_end(int64_t update) const { return ends_epochs(update, recipe_.validation.every_epochs); }
  // A checkpoint every checkpoint.every updates, at the end of every checkpoint.every_epochs
  // epochs, and at each new best validation when kept.
  bool checkpoint_now(int64_t update, bool new_best) const;
  // Why the run has finished (train.max_*, early stopping), or "".
  std::string finish_reason(const TrainingState& state, double elapsed_seconds) const;
  // Why the run stops now: finished, or interrupted by SIGINT/SIGTERM; "" to go on.
  std::string stop_reason(const TrainingState& state, double elapsed_seconds) const;
  // Stopping now because of a signal, not because the run has finished.
  bool interrupted(const TrainingState& state, double elapsed_seconds) const;

 private:
  // Whether update `update` ended an epoch that is a multiple of `every` (0: never).
  bool ends_epochs(int64_t update, int every) const;

  const config::Recipe& recipe_;
  const TrainingJob& job_;
  int64_t length_ = 0;
};

}  // namespace linformer

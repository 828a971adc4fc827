#pragma once
// Every "when" of a training run in one place: when to write a log line, validate, checkpoint,
// and stop (train.max_updates / max_tokens / max_minutes, early stopping, SIGINT/SIGTERM).
// Data-parallel training must take these decisions identically on every rank: this is where.

#include "linformer/config/recipe.h"
#include "linformer/train/checkpoint.h"

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
  explicit RunSchedule(const config::Recipe& recipe);

  bool log_now(int64_t update) const { return update % logging_every_ == 0; }
  bool validate_now(int64_t update) const { return validation_every_ > 0 && update % validation_every_ == 0; }
  // A checkpoint every checkpoint.every updates, and at each new best validation when kept.
  bool checkpoint_now(int64_t update, bool new_best) const;
  // Why the run has finished (train.max_*, early stopping), or "".
  std::string finish_reason(const TrainingState& state, double elapsed_seconds) const;
  // Why the run stops now: finished, or interrupted by SIGINT/SIGTERM; "" to go on.
  std::string stop_reason(const TrainingState& state, double elapsed_seconds) const;
  // Stopping now because of a signal, not because the run has finished.
  bool interrupted(const TrainingState& state, double elapsed_seconds) const;

 private:
  const config::Recipe& recipe_;
  int64_t logging_every_, validation_every_, checkpoint_every_;
};

}  // namespace linformer

#pragma once
// The training statistics between two log lines (mean loss, perplexity and accuracy over the
// interval's masked tokens, tokens per second), and the metrics rows of a run.

#include "linformer/model/evaluator.h"
#include "linformer/train/checkpoint.h"
#include "linformer/train/metrics_log.h"
#include "linformer/train/update_step.h"

#include <chrono>

namespace linformer {

// The fields every row shares: counters of the run at this moment.
MetricsRow metrics_row(const char* kind, const TrainingState& state, uint64_t epoch, double lr, double elapsed_seconds);
// A validation's row.
MetricsRow validation_row(const EvalResult& result, const TrainingState& state, uint64_t epoch, double lr,
                          double elapsed_seconds);

class IntervalMeter {
 public:
  // `resumed`: the sums of the interval a checkpoint interrupted (empty for a fresh run).
  explicit IntervalMeter(const IntervalSums& resumed = {}) : start_(std::chrono::steady_clock::now()), sums_(resumed) {}
  void add(const UpdateResult& update);
  // The interval so far, for a checkpoint.
  const IntervalSums& sums() const { return sums_; }
  // The train row of the interval that ends now (lr and gradient norm of its last update);
  // the next interval starts.
  MetricsRow take_row(const TrainingState& state, uint64_t epoch, double elapsed_seconds);
  // Seconds per update over this session's part of the interval (for an ETA).
  double seconds_per_update() const;
  // The share of that time spent in the gradient allreduce (data parallel; 0 otherwise).
  double allreduce_share() const;

 private:
  std::chrono::steady_clock::time_point start_;
  IntervalSums sums_;
  int64_t timed_tokens_ = 0, timed_updates_ = 0;  // since start_ (tokens/s, ETA): this session only
  double timed_allreduce_seconds_ = 0;
  UpdateResult last_;
};

}  // namespace linformer

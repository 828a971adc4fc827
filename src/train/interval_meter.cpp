#include "linformer/train/interval_meter.h"

#include <cmath>

namespace linformer {

MetricsRow metrics_row(const char* kind, const TrainingState& state, uint64_t epoch, double lr,
                       double elapsed_seconds) {
  MetricsRow row;
  row.kind = kind;
  row.update = state.update;
  row.tokens = state.tokens;
  row.epoch = epoch;
  row.lr = lr;
  row.elapsed_seconds = elapsed_seconds;
  return row;
}

MetricsRow validation_row(const EvalResult& result, const TrainingState& state, uint64_t epoch, double lr,
                          double elapsed_seconds) {
  MetricsRow row = metrics_row("valid", state, epoch, lr, elapsed_seconds);
  row.loss = result.loss();
  row.perplexity = result.perplexity();
  row.accuracy = result.accuracy();
  row.unigram_perplexity = result.unigram_perplexity();
  return row;
}

void IntervalMeter::add(const UpdateResult& update) {
  sums_.loss_sum += update.loss_sum;
  sums_.masked += update.masked;
  sums_.correct += update.correct;
  sums_.tokens += update.tokens;
  ++sums_.updates;
  timed_tokens_ += update.tokens;
  ++timed_updates_;
  timed_allreduce_seconds_ += update.allreduce_seconds;
  last_ = update;
}

double IntervalMeter::seconds_per_update() const {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return timed_updates_ ? seconds / static_cast<double>(timed_updates_) : 0.0;
}

double IntervalMeter::allreduce_share() const {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return seconds > 0 ? timed_allreduce_seconds_ / seconds : 0.0;
}

MetricsRow IntervalMeter::take_row(const TrainingState& state, uint64_t epoch, double elapsed_seconds) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  MetricsRow row = metrics_row("train", state, epoch, last_.lr, elapsed_seconds);
  const double masked = static_cast<double>(sums_.masked);
  row.loss = sums_.masked ? sums_.loss_sum / masked : 0.0;
  row.perplexity = std::exp(row.loss);
  row.accuracy = sums_.masked ? static_cast<double>(sums_.correct) / masked : 0.0;
  row.grad_norm = last_.grad_norm;
  row.tokens_per_second = static_cast<double>(timed_tokens_) / seconds;
  *this = IntervalMeter();
  return row;
}

}  // namespace linformer

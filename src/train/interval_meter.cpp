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
  loss_sum_ += update.loss_sum;
  masked_ += update.masked;
  correct_ += update.correct;
  tokens_ += update.tokens;
  ++updates_;
  last_ = update;
}

double IntervalMeter::seconds_per_update() const {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return updates_ ? seconds / static_cast<double>(updates_) : 0.0;
}

MetricsRow IntervalMeter::take_row(const TrainingState& state, uint64_t epoch, double elapsed_seconds) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  MetricsRow row = metrics_row("train", state, epoch, last_.lr, elapsed_seconds);
  row.loss = masked_ ? loss_sum_ / static_cast<double>(masked_) : 0.0;
  row.perplexity = std::exp(row.loss);
  row.accuracy = masked_ ? static_cast<double>(correct_) / static_cast<double>(masked_) : 0.0;
  row.grad_norm = last_.grad_norm;
  row.tokens_per_second = static_cast<double>(tokens_) / seconds;
  *this = IntervalMeter();
  return row;
}

}  // namespace linformer

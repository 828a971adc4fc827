#include "linformer/train/validator.h"

#include "linformer/train/interval_meter.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace linformer {

Validator::Validator(TrainingJob& job, const RunSchedule& schedule, MetricsLog& metrics)
    : job_(job), schedule_(schedule), metrics_(metrics) {}

bool Validator::run(TrainingState& state, double elapsed_seconds) {
  last_ = job_.validate();
  last_update_ = state.update;
  const bool best = last_.loss < state.best_valid_loss;
  if (best) {
    state.best_valid_loss = last_.loss;
    state.best_update = state.update;
    state.validations_since_best = 0;
  } else {
    ++state.validations_since_best;
  }
  MetricsRow row = last_.scores;
  const MetricsRow counters = metrics_row("valid", state, job_.data_state(state.update + 1).epoch,
                                          schedule_.learning_rate(std::max<int64_t>(state.update, 1)), elapsed_seconds);
  row.kind = counters.kind;
  row.update = counters.update;
  row.tokens = counters.tokens;
  row.epoch = counters.epoch;
  row.lr = counters.lr;
  row.elapsed_seconds = counters.elapsed_seconds;
  metrics_.append(row);
  spdlog::info("valid | update {} | {}{}", state.update, last_.log_details, best ? " | best" : "");
  return best;
}

}  // namespace linformer

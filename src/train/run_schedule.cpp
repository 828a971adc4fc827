#include "linformer/train/run_schedule.h"

#include "linformer/core/signals.h"

#include <fmt/format.h>

namespace linformer {

RunSchedule::RunSchedule(const config::Recipe& recipe)
    : recipe_(recipe),
      logging_every_(recipe.logging.every),
      validation_every_(recipe.validation.every),
      checkpoint_every_(recipe.checkpoint.every) {}

bool RunSchedule::checkpoint_now(int64_t update, bool new_best) const {
  return (checkpoint_every_ > 0 && update % checkpoint_every_ == 0) || (new_best && recipe_.checkpoint.keep_best);
}

std::string RunSchedule::finish_reason(const TrainingState& state, double elapsed_seconds) const {
  const config::TrainConfig& t = recipe_.train;
  if (t.max_updates > 0 && state.update >= t.max_updates)
    return fmt::format("reached train.max_updates = {}", t.max_updates);
  if (t.max_tokens > 0 && state.tokens >= t.max_tokens) return fmt::format("reached train.max_tokens = {}", t.max_tokens);
  if (t.max_minutes > 0 && elapsed_seconds >= 60 * t.max_minutes)
    return fmt::format("reached train.max_minutes = {}", t.max_minutes);
  if (recipe_.validation.patience > 0 && state.validations_since_best >= recipe_.validation.patience)
    return fmt::format("early stopping: {} validations without improvement", recipe_.validation.patience);
  return "";
}

std::string RunSchedule::stop_reason(const TrainingState& state, double elapsed_seconds) const {
  std::string reason = finish_reason(state, elapsed_seconds);
  if (reason.empty() && stop_requested()) reason = fmt::format("received {}", stop_signal_name());
  return reason;
}

bool RunSchedule::interrupted(const TrainingState& state, double elapsed_seconds) const {
  return stop_requested() && finish_reason(state, elapsed_seconds).empty();
}

}  // namespace linformer

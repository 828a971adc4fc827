#include "linformer/train/run_schedule.h"

#include "linformer/core/signals.h"
#include "linformer/optim/lr_schedule.h"

#include <fmt/format.h>

#include <algorithm>

namespace linformer {

RunSchedule::RunSchedule(const config::Recipe& recipe, const TrainingJob& job)
    : recipe_(recipe), job_(job), length_(recipe.train.max_updates) {
  if (recipe.train.max_epochs > 0) {
    const int64_t epochs = job.updates_for_epochs(recipe.train.max_epochs);
    length_ = length_ > 0 ? std::min(length_, epochs) : epochs;
  }
}

double RunSchedule::learning_rate(int64_t update) const {
  return linformer::learning_rate(recipe_.optim, length_, update);
}

bool RunSchedule::ends_epochs(int64_t update, int every) const {
  if (every <= 0) return false;
  // Asked right after the update: its batcher wrapped to batch 0 of the next epoch.
  const uint64_t done = job_.epochs_done(update);
  return done > 0 && job_.data_state(update + 1).position == 0 && done % static_cast<uint64_t>(every) == 0;
}

bool RunSchedule::validate_now(int64_t update) const {
  const int every = recipe_.validation.every;
  return (every > 0 && update % every == 0) || ends_epochs(update, recipe_.validation.every_epochs);
}

bool RunSchedule::checkpoint_now(int64_t update, bool new_best) const {
  const int every = recipe_.checkpoint.every;
  return (every > 0 && update % every == 0) || ends_epochs(update, recipe_.checkpoint.every_epochs) ||
         (new_best && recipe_.checkpoint.keep_best);
}

std::string RunSchedule::finish_reason(const TrainingState& state, double elapsed_seconds) const {
  const config::TrainConfig& t = recipe_.train;
  if (t.max_updates > 0 && state.update >= t.max_updates)
    return fmt::format("reached train.max_updates = {}", t.max_updates);
  if (t.max_epochs > 0 && job_.epochs_done(state.update) >= static_cast<uint64_t>(t.max_epochs))
    return fmt::format("reached train.max_epochs = {}", t.max_epochs);
  if (t.max_tokens > 0 && state.tokens >= t.max_tokens)
    return fmt::format("reached train.max_tokens = {}", t.max_tokens);
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

#include "linformer/train/training_loop.h"

#include "linformer/core/check.h"
#include "linformer/core/signals.h"
#include "linformer/core/world.h"
#include "linformer/train/interval_meter.h"
#include "linformer/train/run_directory.h"
#include "linformer/train/run_schedule.h"
#include "linformer/train/update_step.h"
#include "linformer/train/validator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace linformer {

namespace {

void log_train_row(const MetricsRow& row, int64_t length, double seconds_per_update, double allreduce_share) {
  const std::string eta =
      length > 0 ? " | ETA " + format_duration(seconds_per_update * static_cast<double>(length - row.update)) : "";
  const std::string allreduce = World::distributed() ? fmt::format(" | allreduce {:.1f}%", 100 * allreduce_share) : "";
  spdlog::info(
      "update {}{} | epoch {} | lr {:.3g} | loss {:.4f} | ppl {:.2f} | acc {:.3f} | gnorm {:.3f} | "
      "{:.0f} tok/s{}{}",
      row.update, length > 0 ? fmt::format("/{}", length) : "", row.epoch, row.lr, row.loss, row.perplexity,
      row.accuracy, row.grad_norm, row.tokens_per_second, allreduce, eta);
}

// Why the run stops now ("" to go on), the same on every process: a process stops when any
// does (a signal reaches one, or its clock passes train.max_minutes first).
std::string agreed_stop_reason(const RunSchedule& schedule, const TrainingState& state, double elapsed_seconds) {
  const std::string reason = schedule.stop_reason(state, elapsed_seconds);
  if (!World::any(!reason.empty())) return "";
  return reason.empty() ? "another process stopped" : reason;
}

}  // namespace

std::string agreed_stop_signal() {
  const std::string own = stop_signal_name();
  const char* const names[] = {"SIGTERM", "SIGINT", "SIGHUP", "SIGUSR1"};
  constexpr int kNames = 4;
  int64_t received[kNames] = {};
  for (int i = 0; i < kNames; ++i) received[i] = own == names[i];
  World::sum(received, kNames);
  std::string signal = "a signal";
  for (int i = kNames - 1; i >= 0; --i)
    if (received[i] > 0) signal = names[i];
  return own.empty() ? signal + " (to another process)" : signal;
}

namespace {

// What a data-parallel run sums, how often and when.
void log_data_parallel(const config::Recipe& recipe, TrainingJob& job, const UpdateStep& step, bool overlap_allreduce) {
  spdlog::info(
      "data parallel: {}, each with train.batch_size = {} and train.accumulation = {}: {} sequences per "
      "update; gradients of {:.1f} MB summed over the processes per update, {}",
      World::description(), recipe.train.batch_size, recipe.train.accumulation,
      static_cast<int64_t>(World::size()) * recipe.train.batch_size * recipe.train.accumulation,
      job.params().grads().layout().bytes() / 1e6,
      overlap_allreduce
          ? fmt::format("during the backward pass in {} buckets (--overlap-allreduce)", step.gradient_buckets())
          : std::string("after the backward pass (--overlap-allreduce)"));
}

}  // namespace

LoopOutcome run_training_loop(TrainingJob& job, AdamW& optimizer, TrainingState state, const ResumePlan& plan,
                              const config::Recipe& recipe, LoopOutputs out, bool overlap_allreduce) {
  const int64_t start_update = state.update;
  job.set_data_state(state.update + 1, {state.epoch, state.position});
  const RunSchedule schedule(recipe, job);
  Validator validator(job, schedule, out.metrics);
  UpdateStep step(job, optimizer, recipe, schedule, overlap_allreduce);
  IntervalMeter meter(state.interval);
  if (World::distributed()) log_data_parallel(recipe, job, step, overlap_allreduce);
  const RunClock clock(state.elapsed_seconds);
  // Rank 0 alone writes checkpoints (the processes hold the same weights and state).
  auto save = [&] {
    if (!World::is_root()) return;
    TrainingState saved = state;
    saved.interval = meter.sums();
    out.checkpoints.write(job.params(), optimizer, saved, job.data_state(state.update + 1), clock.elapsed());
  };
  // A checkpoint within the run: by recipe, a failed write may be skipped (tried again at the next).
  auto save_periodic = [&] {
    if (recipe.checkpoint.on_write_error == config::WriteErrorPolicy::stop) return save();
    try {
      save();
    } catch (const Error& e) {
      spdlog::error(
          "checkpoint at update {} not written ({}); training goes on (checkpoint.on_write_error = "
          "\"skip\"), the next one is tried as scheduled",
          state.update, e.what());
    }
  };

  LoopOutcome outcome;
  outcome.reason = agreed_stop_reason(schedule, state, clock.elapsed());
  if (plan.resumes() && !outcome.reason.empty() && !stop_requested()) {
    // A finished run resumed: nothing to train, and no row or checkpoint to add.
    spdlog::info("already finished at update {} ({}): nothing to do", state.update, outcome.reason);
    outcome.already_finished = true;
    outcome.validation = job.validate();
    outcome.state = state;
    outcome.last_checkpoint = plan.checkpoint;
    return outcome;
  }
  while (outcome.reason.empty()) {
    meter.add(step.run(state));
    const bool validate = schedule.validate_now(state.update);
    // An epoch's validation closes the logging interval, so that its row reads against the
    // training row of the same epoch.
    if (schedule.log_now(state.update) || (schedule.validates_epoch_end(state.update) && meter.sums().updates > 0)) {
      const double seconds_per_update = meter.seconds_per_update();
      const double allreduce_share = meter.allreduce_share();
      const MetricsRow row = meter.take_row(state, job.data_state(state.update + 1).epoch, clock.elapsed());
      out.metrics.append(row);
      log_train_row(row, schedule.length(), seconds_per_update, allreduce_share);
    }
    const bool best = validate && validator.run(state, clock.elapsed());
    if (schedule.checkpoint_now(state.update, best)) save_periodic();
    outcome.reason = agreed_stop_reason(schedule, state, clock.elapsed());
  }

  outcome.interrupted = World::any(schedule.interrupted(state, clock.elapsed()));
  spdlog::info("stopping at update {}: {}", state.update, outcome.reason);
  if (!outcome.interrupted && validator.last_update() != state.update) validator.run(state, clock.elapsed());
  const bool nothing_new = plan.resumes() && state.update == start_update;
  if (out.checkpoints.last_update() != state.update && !nothing_new) save();
  outcome.last_checkpoint = out.checkpoints.last_update() >= 0 ? out.checkpoints.last_path() : plan.checkpoint;
  outcome.validation = validator.last();
  const data::BatcherState position = job.data_state(state.update + 1);
  state.epoch = position.epoch;
  state.position = position.position;
  state.elapsed_seconds = clock.elapsed();
  state.interval = meter.sums();
  outcome.state = state;
  return outcome;
}

}  // namespace linformer

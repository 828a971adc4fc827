#include "linformer/train/trainer.h"

#include "linformer/config/recipe_loader.h"
#include "linformer/core/file_lock.h"
#include "linformer/core/fs.h"
#include "linformer/core/logging.h"
#include "linformer/core/signals.h"
#include "linformer/core/thread_placement.h"
#include "linformer/core/world.h"
#include "linformer/kernels/context.h"
#include "linformer/model/batch_adapter.h"
#include "linformer/model/memory_estimate.h"
#include "linformer/model/mlm_model.h"
#include "linformer/optim/adamw.h"
#include "linformer/train/interval_meter.h"
#include "linformer/train/metrics_log.h"
#include "linformer/train/resume_plan.h"
#include "linformer/train/run_directory.h"
#include "linformer/train/run_schedule.h"
#include "linformer/train/training_data.h"
#include "linformer/train/update_step.h"
#include "linformer/train/validator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <optional>

namespace linformer {

namespace fs = std::filesystem;

std::string default_run_dir(const config::Recipe& recipe) { return (fs::path("runs") / recipe.name).string(); }

namespace {

// The command that continues this run, with every --set of this one.
std::string resume_command(const TrainOptions& options, const std::string& run_dir) {
  std::string command = World::distributed()
                            ? fmt::format("mpirun -np {} <your mpirun options> linformer train --recipe ", World::size())
                            : std::string("linformer train --recipe ");
  command += shell_quoted(options.recipe_path);
  for (const auto& o : options.overrides) command += " --set " + shell_quoted(o);
  return command + " --run-dir " + shell_quoted(run_dir) + " --resume auto";
}

// --overlap-allreduce: auto overlaps when the processes span several machines (the network then
// works while the cores compute); on one machine the cores that compute would also do the sums.
bool overlap_allreduce(OverlapAllreduce choice) {
  if (!World::distributed() || choice == OverlapAllreduce::off) return false;
  if (!World::other_threads_may_call()) {
    if (choice == OverlapAllreduce::on)
      spdlog::warn("--overlap-allreduce on: this MPI library does not let a second thread call it "
                   "(MPI_THREAD_SERIALIZED not granted); the gradients are summed after the backward pass");
    return false;
  }
  return choice == OverlapAllreduce::on || World::spans_several_machines();
}

void log_train_row(const MetricsRow& row, int64_t max_updates, double seconds_per_update, double allreduce_share) {
  const std::string eta =
      max_updates > 0 ? " | ETA " + format_duration(seconds_per_update * static_cast<double>(max_updates - row.update))
                      : "";
  const std::string allreduce =
      World::distributed() ? fmt::format(" | allreduce {:.1f}%", 100 * allreduce_share) : "";
  spdlog::info("update {}{} | lr {:.3g} | loss {:.4f} | ppl {:.2f} | acc {:.3f} | gnorm {:.3f} | {:.0f} tok/s{}{}",
               row.update, max_updates > 0 ? fmt::format("/{}", max_updates) : "", row.lr, row.loss, row.perplexity,
               row.accuracy, row.grad_norm, row.tokens_per_second, allreduce, eta);
}

TrainSummary summary_of(std::string run_dir, int64_t updates, const EvalResult& valid, std::string checkpoint) {
  TrainSummary s;
  s.run_dir = std::move(run_dir);
  s.updates = updates;
  s.valid_loss = valid.loss();
  s.valid_perplexity = valid.perplexity();
  s.valid_accuracy = valid.accuracy();
  s.valid_unigram_perplexity = valid.unigram_perplexity();
  s.last_checkpoint = std::move(checkpoint);
  return s;
}

// Why the run stops now ("" to go on), the same on every process: a process stops when any
// does (a signal reaches one, or its clock passes train.max_minutes first).
std::string agreed_stop_reason(const RunSchedule& schedule, const TrainingState& state, double elapsed_seconds) {
  const std::string reason = schedule.stop_reason(state, elapsed_seconds);
  if (!World::any(!reason.empty())) return "";
  return reason.empty() ? "another process stopped" : reason;
}

// The signal that stopped the run, the same on every process (a signal may reach one process only).
std::string agreed_stop_signal() {
  const std::string own = stop_signal_name();
  int64_t received[2] = {own == "SIGTERM", own == "SIGINT"};
  World::sum(received, 2);
  const std::string signal = received[0] > 0 ? "SIGTERM" : received[1] > 0 ? "SIGINT" : "a signal";
  return own.empty() ? signal + " (to another process)" : signal;
}

// The run in a locked, started run directory: data, model, optimizer and state, then the loop
// of updates with logging, validation, checkpoints and stopping as the schedule says, then a
// last validation and checkpoint. The parts live in their own files (update_step.h,
// run_schedule.h, interval_meter.h, validator.h, resume_plan.h) so that fine-tuning and
// data-parallel training can reuse them.
TrainSummary train_in(const std::string& run_dir, const config::Recipe& recipe, const std::string& resolved,
                      const ResumePlan& plan, const TrainOptions& options) {
  const auto data = open_training_data(recipe, options.recipe_path);
  const DataIdentity identity = data_identity(*data, recipe);
  check_resume_data(plan, identity, recipe.data.prepared_dir);
  const ModelSpec spec = ModelSpec::from_recipe(recipe);
  const int64_t B = recipe.train.batch_size, n = recipe.data.seq_len;
  const int64_t max_masked = std::max(max_masked_per_batch(recipe.masking, B, n),
                                      max_masked_per_batch(data::validation_masking(recipe), B, n));
  check_memory_fits(spec, B, max_masked, WorkspaceUse::training, "training",
                    fmt::format("model.layers = {}, model.d_model = {}, model.ffn_dim = {}, data.vocab_size = {}, "
                                "train.batch_size = {} and data.seq_len = {}",
                                spec.layers, spec.d_model, spec.ffn_dim, spec.vocab_size, B, n));
  MlmModel model(spec, B, max_masked);
  model.params().initialize(static_cast<uint64_t>(recipe.seed));
  AdamW optimizer(model.params(), recipe.optim);
  TrainingState state = load_resume_point(plan, spec, model.params(), optimizer);
  const int64_t start_update = state.update;
  data->train_batcher(state.update + 1).set_state({state.epoch, state.position});
  MetricsLog metrics(run_dir, state.update, /*writes=*/World::is_root());
  spdlog::info("model: {} parameters ({:.1f} MB), activations {:.1f} MB; train {} blocks ({} batches/epoch), valid {} blocks",
               model.params().count(), model.params().values().layout().bytes() / 1e6, model.activation_bytes() / 1e6,
               data->train_blocks->size(), data->train->batches_per_epoch(), data->valid_blocks->size());
  if (data->short_updates > 0)
    spdlog::info("sequence-length warm-up: updates 1 to {} on blocks of {} tokens ({} blocks, {} micro-batches an "
                 "update), then blocks of {}",
                 data->short_updates, recipe.train.short_seq_len, data->short_blocks->size(), data->short_micro_batches,
                 n);

  const RunSchedule schedule(recipe);
  Validator validator(model, *data, recipe, metrics);
  RunCheckpoints checkpoints((fs::path(run_dir) / "checkpoints").string(), recipe.checkpoint, resolved,
                             data->prepared.tokenizer.serialized(), identity);
  const bool overlap = overlap_allreduce(options.overlap_allreduce);
  UpdateStep step(model, optimizer, *data, recipe, overlap);
  IntervalMeter meter(state.interval);
  const RunClock clock(state.elapsed_seconds);
  // Rank 0 alone writes checkpoints (the processes hold the same weights and state).
  auto save = [&] {
    if (!World::is_root()) return;
    TrainingState saved = state;
    saved.interval = meter.sums();
    checkpoints.write(model.params(), optimizer, saved, data->train_batcher(state.update + 1).state(), clock.elapsed());
  };
  // A checkpoint within the run: by recipe, a failed write may be skipped (tried again at the next).
  auto save_periodic = [&] {
    if (recipe.checkpoint.on_write_error == config::WriteErrorPolicy::stop) return save();
    try {
      save();
    } catch (const Error& e) {
      spdlog::error("checkpoint at update {} not written ({}); training goes on (checkpoint.on_write_error = "
                    "\"skip\"), the next one is tried as scheduled",
                    state.update, e.what());
    }
  };

  if (World::distributed())
    spdlog::info("data parallel: {}, each with train.batch_size = {} and train.accumulation = {}: {} sequences per "
                 "update; gradients of {:.1f} MB summed over the processes per update, {}",
                 World::description(), B, recipe.train.accumulation,
                 static_cast<int64_t>(World::size()) * B * recipe.train.accumulation,
                 model.params().grads().layout().bytes() / 1e6,
                 overlap ? fmt::format("during the backward pass in {} buckets (--overlap-allreduce)",
                                       step.gradient_buckets())
                         : std::string("after the backward pass (--overlap-allreduce)"));
  std::string reason = agreed_stop_reason(schedule, state, clock.elapsed());
  if (plan.resumes() && !reason.empty() && !stop_requested()) {
    // A finished run resumed: nothing to train, and no row or checkpoint to add.
    EvalResult valid = validator.evaluate();
    spdlog::info("{} already finished at update {} ({}): nothing to do", run_dir, state.update, reason);
    return summary_of(run_dir, state.update, valid, plan.checkpoint);
  }
  while (reason.empty()) {
    meter.add(step.run(state));
    if (data->short_updates > 0 && state.update == data->short_updates)
      spdlog::info("sequence-length warm-up done at update {}: blocks of {} tokens from here", state.update, n);
    if (schedule.log_now(state.update)) {
      const double seconds_per_update = meter.seconds_per_update();
      const double allreduce_share = meter.allreduce_share();
      const MetricsRow row = meter.take_row(state, data->train_batcher(state.update + 1).state().epoch, clock.elapsed());
      metrics.append(row);
      log_train_row(row, recipe.train.max_updates, seconds_per_update, allreduce_share);
    }
    const bool best = schedule.validate_now(state.update) && validator.run(state, clock.elapsed());
    if (schedule.checkpoint_now(state.update, best)) save_periodic();
    reason = agreed_stop_reason(schedule, state, clock.elapsed());
  }

  // The end: a finished run gets a last validation and checkpoint unless this update just had
  // them. An interrupted one only a checkpoint: validating there would add a row and a patience
  // count that the uninterrupted run never has, so the resumed run could not continue exactly.
  const bool interrupted = World::any(schedule.interrupted(state, clock.elapsed()));
  spdlog::info("stopping at update {}: {}", state.update, reason);
  if (!interrupted && validator.last_update() != state.update) validator.run(state, clock.elapsed());
  const bool nothing_new = plan.resumes() && state.update == start_update;
  if (checkpoints.last_update() != state.update && !nothing_new) save();
  const std::string last_checkpoint = checkpoints.last_update() >= 0 ? checkpoints.last_path() : plan.checkpoint;
  TrainSummary summary = summary_of(run_dir, state.update, validator.last(), last_checkpoint);
  summary.interrupted = interrupted;
  if (interrupted) {
    const std::string signal = agreed_stop_signal();
    if (World::is_root())
      spdlog::warn("interrupted by {} at update {}; continue with: {}", signal, state.update,
                   resume_command(options, run_dir));
    return summary;
  }
  spdlog::info("validation perplexity {:.2f} (loss {:.4f}, accuracy {:.4f}; {:.3f} × the unigram baseline's {:.2f}) "
               "after {} updates",
               summary.valid_perplexity, summary.valid_loss, summary.valid_accuracy,
               summary.valid_perplexity / summary.valid_unigram_perplexity, summary.valid_unigram_perplexity,
               summary.updates);
  spdlog::info("metrics: {} and {}; plot with: python3 scripts/plot_curves.py {} --out {}/curves", metrics.csv_path(),
               metrics.jsonl_path(), run_dir, run_dir);
  return summary;
}

}  // namespace

TrainSummary run_training(const TrainOptions& options) {
  install_stop_handlers();  // first: a signal during set-up also ends with a checkpoint, not a kill
  World::set_peer_timeout(options.peer_timeout_seconds);
  const config::Recipe recipe = config::load_recipe(options.recipe_path, options.overrides);
  const std::string resolved = config::dump_recipe(recipe);
  const std::string run_dir = options.run_dir.empty() ? default_run_dir(recipe) : options.run_dir;
  const OpenmpTeam openmp_team(recipe.threads);  // pinned until the command returns
  // Data parallel: rank 0 alone locks and writes the run directory; the others read it.
  std::optional<FileLock> lock;
  if (World::is_root()) {
    create_directories_or_fail(run_dir);
    lock.emplace((fs::path(run_dir) / "run.lock").string(), fmt::format("run directory '{}'", run_dir));
  }
  World::barrier();  // the others plan after rank 0 holds the lock
  const ResumePlan plan = plan_resume(options, run_dir);  // refuses before anything is written
  if (World::is_root()) start_run_directory(run_dir, recipe, resolved);
  else select_matmul_precision(recipe.train.precision == config::Precision::bf16);
  try {
    return train_in(run_dir, recipe, resolved, plan, options);
  } catch (const Error& e) {
    const auto saved = list_checkpoints((fs::path(run_dir) / "checkpoints").string());
    throw Error(fmt::format("{}\nthe run's newest checkpoint is {}; once the cause is fixed, continue with: {}", e.what(),
                            saved.empty() ? "none (the run starts again)" : saved.back().path,
                            resume_command(options, run_dir)));
  }
}

}  // namespace linformer

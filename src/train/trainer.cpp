#include "linformer/train/trainer.h"

#include "linformer/config/recipe_loader.h"
#include "linformer/core/fs.h"
#include "linformer/core/logging.h"
#include "linformer/core/signals.h"
#include "linformer/kernels/context.h"
#include "linformer/model/batch_adapter.h"
#include "linformer/model/mlm_model.h"
#include "linformer/optim/adamw.h"
#include "linformer/train/interval_meter.h"
#include "linformer/train/metrics_log.h"
#include "linformer/train/resume_plan.h"
#include "linformer/train/run_schedule.h"
#include "linformer/train/training_data.h"
#include "linformer/train/update_step.h"
#include "linformer/train/validator.h"

#include <fmt/format.h>
#include <omp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

namespace linformer {

namespace fs = std::filesystem;

std::string default_run_dir(const config::Recipe& recipe) { return (fs::path("runs") / recipe.name).string(); }

namespace {

std::string format_duration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds);
  return s >= 3600 ? fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60) : fmt::format("{}m{:02d}s", s / 60, s % 60);
}

// Creates the run directory, logs into its train.log, writes the resolved recipe, and sets the
// matmul precision (said in the log).
void start_run_directory(const std::string& run_dir, const config::Recipe& recipe, const std::string& resolved) {
  fs::create_directories(run_dir);
  log_to_file((fs::path(run_dir) / "train.log").string());
  write_file_atomic((fs::path(run_dir) / "recipe.toml").string(), resolved);
  spdlog::info("run directory {} (resolved recipe in recipe.toml), {} threads", run_dir, omp_get_max_threads());
  const bool want_bf16 = recipe.train.precision == config::Precision::bf16;
  const MatmulPrecision precision = select_matmul_precision(want_bf16);
  if (want_bf16 && !precision.bf16) spdlog::warn("{}", precision.note);
  else spdlog::info("precision: {}", precision.note);
}

void log_train_row(const MetricsRow& row, int64_t max_updates, double seconds_per_update) {
  const std::string eta =
      max_updates > 0 ? " | ETA " + format_duration(seconds_per_update * static_cast<double>(max_updates - row.update))
                      : "";
  spdlog::info("update {}{} | lr {:.3g} | loss {:.4f} | ppl {:.2f} | acc {:.3f} | gnorm {:.3f} | {:.0f} tok/s{}",
               row.update, max_updates > 0 ? fmt::format("/{}", max_updates) : "", row.lr, row.loss, row.perplexity,
               row.accuracy, row.grad_norm, row.tokens_per_second, eta);
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

}  // namespace

// The run: set-up (recipe, resume plan, run directory, data, model, optimizer, state), then the
// loop of updates with logging, validation, checkpoints and stopping as the schedule says, then
// a last validation and checkpoint. The parts live in their own files (update_step.h,
// run_schedule.h, interval_meter.h, validator.h, resume_plan.h) so that fine-tuning and
// data-parallel training can reuse them.
TrainSummary run_training(const TrainOptions& options) {
  install_stop_handlers();  // first: a signal during set-up also ends with a checkpoint, not a kill
  const config::Recipe recipe = config::load_recipe(options.recipe_path, options.overrides);
  const std::string resolved = config::dump_recipe(recipe);
  const std::string run_dir = options.run_dir.empty() ? default_run_dir(recipe) : options.run_dir;
  if (recipe.threads > 0) omp_set_num_threads(recipe.threads);
  const ResumePlan plan = plan_resume(options, run_dir);  // refuses before anything is written
  start_run_directory(run_dir, recipe, resolved);

  const auto data = open_training_data(recipe, options.recipe_path);
  const ModelSpec spec = ModelSpec::from_recipe(recipe);
  const int64_t B = recipe.train.batch_size, n = recipe.data.seq_len;
  MlmModel model(spec, B,
                 std::max(max_masked_per_batch(recipe.masking, B, n),
                          max_masked_per_batch(data::validation_masking(recipe), B, n)));
  model.params().initialize(static_cast<uint64_t>(recipe.seed));
  AdamW optimizer(model.params(), recipe.optim);
  TrainingState state = load_resume_point(plan, spec, model.params(), optimizer);
  data->train->set_state({state.epoch, state.position});
  MetricsLog metrics(run_dir, state.update);
  spdlog::info("model: {} parameters ({:.1f} MB), activations {:.1f} MB; train {} blocks ({} batches/epoch), valid {} blocks",
               model.params().count(), model.params().values().layout().bytes() / 1e6, model.activation_bytes() / 1e6,
               data->train_blocks->size(), data->train->batches_per_epoch(), data->valid_blocks->size());

  const RunSchedule schedule(recipe);
  Validator validator(model, *data, recipe, metrics);
  RunCheckpoints checkpoints((fs::path(run_dir) / "checkpoints").string(), recipe.checkpoint, resolved,
                             data->prepared.tokenizer.serialized());
  UpdateStep step(model, optimizer, *data->train, recipe);
  IntervalMeter meter;
  const RunClock clock(state.elapsed_seconds);
  auto save = [&] { checkpoints.write(model.params(), optimizer, state, data->train->state(), clock.elapsed()); };

  std::string reason = schedule.stop_reason(state, clock.elapsed());
  if (plan.resumes() && !reason.empty() && !stop_requested()) {
    // A finished run resumed: nothing to train, and no row or checkpoint to add.
    EvalResult valid = evaluate(model, *data->valid, recipe.validation.max_batches, &data->unigram);
    spdlog::info("{} already finished at update {} ({}): nothing to do", run_dir, state.update, reason);
    return summary_of(run_dir, state.update, valid, plan.checkpoint);
  }
  while (reason.empty()) {
    meter.add(step.run(state));
    if (schedule.log_now(state.update)) {
      const double seconds_per_update = meter.seconds_per_update();
      const MetricsRow row = meter.take_row(state, data->train->state().epoch, clock.elapsed());
      metrics.append(row);
      log_train_row(row, recipe.train.max_updates, seconds_per_update);
    }
    const bool best = schedule.validate_now(state.update) && validator.run(state, clock.elapsed());
    if (schedule.checkpoint_now(state.update, best)) save();
    reason = schedule.stop_reason(state, clock.elapsed());
  }

  // The end: a last validation and checkpoint unless this update just had them.
  spdlog::info("stopping at update {}: {}", state.update, reason);
  if (validator.last_update() != state.update) validator.run(state, clock.elapsed());
  if (checkpoints.last_update() != state.update) save();
  TrainSummary summary = summary_of(run_dir, state.update, validator.last(), checkpoints.last_path());
  summary.interrupted = stop_requested();
  if (summary.interrupted)
    spdlog::warn("interrupted by {}; continue with: linformer train --recipe {} --run-dir {} --resume auto",
                 stop_signal_name(), options.recipe_path, run_dir);
  spdlog::info("validation perplexity {:.2f} (loss {:.4f}, accuracy {:.4f}; {:.3f} × the unigram baseline's {:.2f}) "
               "after {} updates",
               summary.valid_perplexity, summary.valid_loss, summary.valid_accuracy,
               summary.valid_perplexity / summary.valid_unigram_perplexity, summary.valid_unigram_perplexity,
               summary.updates);
  spdlog::info("metrics: {} and {}; plot with: python3 scripts/plot_curves.py {} --out {}/curves", metrics.csv_path(),
               metrics.jsonl_path(), run_dir, run_dir);
  return summary;
}

}  // namespace linformer

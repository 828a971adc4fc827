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
#include "linformer/train/metrics_log.h"
#include "linformer/train/mlm_job.h"
#include "linformer/train/resume_plan.h"
#include "linformer/train/run_directory.h"
#include "linformer/train/training_data.h"
#include "linformer/train/training_loop.h"

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
  std::string command =
      World::distributed() ? fmt::format("mpirun -np {} <your mpirun options> linformer train --recipe ", World::size())
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
      spdlog::warn(
          "--overlap-allreduce on: this MPI library does not let a second thread call it "
          "(MPI_THREAD_SERIALIZED not granted); the gradients are summed after the backward pass");
    return false;
  }
  return choice == OverlapAllreduce::on || World::spans_several_machines();
}

TrainSummary summary_of(std::string run_dir, const LoopOutcome& outcome) {
  TrainSummary s;
  s.run_dir = std::move(run_dir);
  s.updates = outcome.state.update;
  s.valid_loss = outcome.validation.scores.loss;
  s.valid_perplexity = outcome.validation.scores.perplexity;
  s.valid_accuracy = outcome.validation.scores.accuracy;
  s.valid_unigram_perplexity = outcome.validation.scores.unigram_perplexity;
  s.interrupted = outcome.interrupted;
  s.last_checkpoint = outcome.last_checkpoint;
  return s;
}

// The run in a locked, started run directory: data, model, optimizer and state, then the one
// training loop (training_loop.h) with pretraining as its job (mlm_job.h).
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
  MetricsLog metrics(run_dir, state.update, /*writes=*/World::is_root());
  spdlog::info(
      "model: {} parameters ({:.1f} MB), activations {:.1f} MB; train {} blocks ({} batches/epoch), valid {} blocks",
      model.params().count(), model.params().values().layout().bytes() / 1e6, model.activation_bytes() / 1e6,
      data->train_blocks->size(), data->train->batches_per_epoch(), data->valid_blocks->size());
  if (data->short_updates > 0)
    spdlog::info(
        "sequence-length warm-up: updates 1 to {} on blocks of {} tokens ({} blocks, {} micro-batches an "
        "update), then blocks of {}",
        data->short_updates, recipe.train.short_seq_len, data->short_blocks->size(), data->short_micro_batches, n);

  RunCheckpoints checkpoints((fs::path(run_dir) / "checkpoints").string(), recipe.checkpoint, resolved,
                             data->prepared.tokenizer.serialized(), identity);
  const bool overlap = overlap_allreduce(options.overlap_allreduce);
  MlmJob job(model, *data, recipe);
  const LoopOutcome outcome = run_training_loop(job, optimizer, state, plan, recipe, {checkpoints, metrics}, overlap);
  TrainSummary summary = summary_of(run_dir, outcome);
  if (outcome.already_finished) return summary;
  if (outcome.interrupted) {
    const std::string signal = agreed_stop_signal();
    if (World::is_root())
      spdlog::warn("interrupted by {} at update {}; continue with: {}", signal, summary.updates,
                   resume_command(options, run_dir));
    return summary;
  }
  spdlog::info(
      "validation perplexity {:.2f} (loss {:.4f}, accuracy {:.4f}; {:.3f} × the unigram baseline's {:.2f}) "
      "after {} updates",
      summary.valid_perplexity, summary.valid_loss, summary.valid_accuracy,
      summary.valid_perplexity / summary.valid_unigram_perplexity, summary.valid_unigram_perplexity, summary.updates);
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
  // Refuses before anything is written.
  const ResumePlan plan =
      plan_resume({options.resume, options.reset_optimizer, options.reset_schedule, options.reset_data}, run_dir);
  if (World::is_root())
    start_run_directory(run_dir, recipe, resolved);
  else
    select_matmul_precision(recipe.train.precision == config::Precision::bf16);
  try {
    return train_in(run_dir, recipe, resolved, plan, options);
  } catch (const Error& e) {
    const auto saved = list_checkpoints((fs::path(run_dir) / "checkpoints").string());
    throw Error(fmt::format("{}\nthe run's newest checkpoint is {}; once the cause is fixed, continue with: {}",
                            e.what(), saved.empty() ? "none (the run starts again)" : saved.back().path,
                            resume_command(options, run_dir)));
  }
}

}  // namespace linformer

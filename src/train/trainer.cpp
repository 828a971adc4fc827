#include "linformer/kernels/context.h"
#include "linformer/train/trainer.h"

#include "linformer/config/recipe_loader.h"
#include "linformer/core/check.h"
#include "linformer/core/fs.h"
#include "linformer/core/logging.h"
#include "linformer/core/signals.h"
#include "linformer/data/batcher.h"
#include "linformer/data/prepared.h"
#include "linformer/model/mlm_model.h"
#include "linformer/model/weights_file.h"
#include "linformer/train/adamw.h"
#include "linformer/train/batch_adapter.h"
#include "linformer/train/checkpoint.h"
#include "linformer/train/evaluator.h"
#include "linformer/train/lr_schedule.h"
#include "linformer/train/metrics_log.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <filesystem>

namespace linformer {

namespace fs = std::filesystem;

std::string default_run_dir(const config::Recipe& recipe) { return (fs::path("runs") / recipe.name).string(); }

namespace {

using Clock = std::chrono::steady_clock;

std::string format_duration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds);
  return s >= 3600 ? fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60) : fmt::format("{}m{:02d}s", s / 60, s % 60);
}

// The model keys of two ModelSpecs that differ, for a refused resume.
std::vector<std::string> differing_model_keys(const ModelSpec& a, const ModelSpec& b) {
  const nlohmann::json ja = a, jb = b;
  std::vector<std::string> keys;
  for (const auto& [key, value] : ja.items()) {
    if (key == "dropout" || key == "attention_dropout" || key == "activation_dropout") continue;  // may change
    if (!jb.contains(key) || jb.at(key) != value)
      keys.push_back(fmt::format("model.{} ({} in the checkpoint, {} now)", key, value.dump(),
                                 jb.contains(key) ? jb.at(key).dump() : "absent"));
  }
  return keys;
}

struct DataSet {
  explicit DataSet(data::PreparedData p) : prepared(std::move(p)) {}
  data::PreparedData prepared;
  std::unique_ptr<data::UnigramModel> unigram;  // the baseline each validation is read against
  std::unique_ptr<data::TokenBlocks> train_blocks, valid_blocks;
  std::unique_ptr<data::Masker> masker, valid_masker;
  std::unique_ptr<data::Batcher> train, valid;
};

std::unique_ptr<DataSet> open_data(const config::Recipe& recipe, const std::string& recipe_path) {
  if (!fs::exists(fs::path(recipe.data.prepared_dir) / "meta.json"))
    LF_FAIL("no prepared data in '{}': run `linformer prepare --recipe {}` first", recipe.data.prepared_dir,
            recipe_path);
  auto d = std::make_unique<DataSet>(data::open_prepared(recipe.data.prepared_dir));
  const int vocab = d->prepared.tokenizer.vocab_size();
  if (vocab != recipe.data.vocab_size)
    LF_FAIL("the prepared data in '{}' has a vocabulary of {}, the recipe says data.vocab_size = {}: run "
            "`linformer prepare --recipe {}` again",
            recipe.data.prepared_dir, vocab, recipe.data.vocab_size, recipe_path);
  d->unigram = std::make_unique<data::UnigramModel>(d->prepared.train);
  d->train_blocks = std::make_unique<data::TokenBlocks>(d->prepared.train, recipe.data.seq_len, recipe.data.break_mode);
  d->valid_blocks = std::make_unique<data::TokenBlocks>(d->prepared.valid, recipe.data.seq_len, recipe.data.break_mode);
  d->masker = std::make_unique<data::Masker>(recipe.masking, vocab, d->prepared.tokenizer.word_starts(),
                                             static_cast<uint64_t>(recipe.seed));
  d->valid_masker = std::make_unique<data::Masker>(data::validation_masking(recipe), vocab,
                                                   d->prepared.tokenizer.word_starts(), static_cast<uint64_t>(recipe.seed));
  data::BatcherOptions train_options;
  train_options.batch_size = recipe.train.batch_size;
  train_options.seed = static_cast<uint64_t>(recipe.seed);
  d->train = std::make_unique<data::Batcher>(*d->train_blocks, *d->masker, train_options);
  data::BatcherOptions valid_options = train_options;
  valid_options.shuffle = false;
  valid_options.fixed_mask = true;
  valid_options.drop_last = false;
  d->valid = std::make_unique<data::Batcher>(*d->valid_blocks, *d->valid_masker, valid_options);
  if (d->train->batches_per_epoch() == 0)
    LF_FAIL("the training split of '{}' has {} blocks of {} tokens, fewer than one batch of {}",
            recipe.data.prepared_dir, d->train_blocks->size(), recipe.data.seq_len, recipe.train.batch_size);
  return d;
}

}  // namespace

TrainSummary run_training(const TrainOptions& options) {
  const config::Recipe recipe = config::load_recipe(options.recipe_path, options.overrides);
  const std::string resolved = config::dump_recipe(recipe);
  TrainSummary summary;
  summary.run_dir = options.run_dir.empty() ? default_run_dir(recipe) : options.run_dir;
  const std::string run_dir = summary.run_dir;
  const std::string checkpoints_dir = (fs::path(run_dir) / "checkpoints").string();
  if (recipe.threads > 0) omp_set_num_threads(recipe.threads);

  // ---- where to start ------------------------------------------------------------------
  std::string resume_from;
  if (options.resume == "auto") {
    const auto found = list_checkpoints(checkpoints_dir);
    if (!found.empty()) resume_from = found.back().path;
  } else if (!options.resume.empty()) {
    if (!fs::exists(fs::path(options.resume) / "DONE"))
      LF_FAIL("--resume {}: not a complete checkpoint directory (no DONE marker)", options.resume);
    resume_from = options.resume;
  }
  // A schedule reset numbers updates from 0 again: its checkpoints must not share a directory
  // with higher-numbered ones, or a later --resume auto would pick the old run's.
  if (options.reset_schedule && !list_checkpoints(checkpoints_dir).empty())
    LF_FAIL("--reset-schedule starts the update count again: write into a new --run-dir (resume from "
            "--resume {}/checkpoints/checkpoint_…) so that its checkpoints are not mixed with the old ones",
            run_dir);
  if (options.resume.empty() && !list_checkpoints(checkpoints_dir).empty()) {
    LF_FAIL("run directory '{}' already has checkpoints: continue it with --resume auto, or choose another --run-dir",
            run_dir);
  }

  fs::create_directories(run_dir);
  log_to_file((fs::path(run_dir) / "train.log").string());
  write_file_atomic((fs::path(run_dir) / "recipe.toml").string(), resolved);
  spdlog::info("run directory {} (resolved recipe in recipe.toml), {} threads", run_dir, omp_get_max_threads());
  const bool want_bf16 = recipe.train.precision == config::Precision::bf16;
  const MatmulPrecision precision = select_matmul_precision(want_bf16);
  if (want_bf16 && !precision.bf16) spdlog::warn("{}", precision.note);
  else spdlog::info("precision: {}", precision.note);

  const auto data = open_data(recipe, options.recipe_path);
  const ModelSpec spec = ModelSpec::from_recipe(recipe);
  const int64_t B = recipe.train.batch_size, n = recipe.data.seq_len;
  MlmModel model(spec, B,
                 std::max(max_masked_per_batch(recipe.masking, B, n),
                          max_masked_per_batch(data::validation_masking(recipe), B, n)));
  model.params().initialize(static_cast<uint64_t>(recipe.seed));
  AdamW optimizer(model.params(), recipe.optim);
  TrainingState state;
  state.recipe_hash = nlohmann::json(spec).dump();

  if (!resume_from.empty()) {
    const ModelSpec stored = read_weights_spec((fs::path(resume_from) / "model.safetensors").string());
    const auto differences = differing_model_keys(stored, spec);
    if (!differences.empty()) {
      std::string message = fmt::format("cannot resume from {}: the recipe's model differs from the checkpoint's:", resume_from);
      for (const auto& d : differences) message += "\n  " + d;
      throw Error(message);
    }
    state = read_checkpoint(resume_from, model.params(), &optimizer);
    if (options.reset_optimizer) optimizer.reset();
    if (options.reset_schedule) state.update = 0, state.best_valid_loss = INFINITY, state.validations_since_best = 0;
    if (options.reset_data) state.epoch = 0, state.position = 0;
    spdlog::info("resumed from {}: update {}, {} tokens, data at epoch {} batch {}", resume_from, state.update,
                 state.tokens, state.epoch, state.position);
  }
  data->train->set_state({state.epoch, state.position});
  MetricsLog metrics(run_dir, state.update);

  spdlog::info("model: {} parameters ({:.1f} MB), activations {:.1f} MB; train {} blocks ({} batches/epoch), valid {} blocks",
               model.params().count(), model.params().values().layout().bytes() / 1e6, model.activation_bytes() / 1e6,
               data->train_blocks->size(), data->train->batches_per_epoch(), data->valid_blocks->size());

  install_stop_handlers();
  const auto& t = recipe.train;
  const int64_t max_updates = t.max_updates;
  std::vector<data::Batch> micro(static_cast<size_t>(t.accumulation));
  std::vector<int32_t> positions;

  // Interval statistics for the next log line.
  double interval_loss = 0;
  int64_t interval_masked = 0, interval_correct = 0, interval_tokens = 0;
  auto interval_start = Clock::now();
  const auto session_start = Clock::now();
  const double elapsed_before = state.elapsed_seconds;
  std::string last_checkpoint;
  int64_t last_validation = -1, last_checkpoint_update = -1;
  EvalResult last_eval;

  auto elapsed = [&] { return elapsed_before + std::chrono::duration<double>(Clock::now() - session_start).count(); };
  auto checkpoint = [&] {
    state.epoch = data->train->state().epoch;
    state.position = data->train->state().position;
    state.elapsed_seconds = elapsed();
    last_checkpoint = write_checkpoint(checkpoints_dir, model.params(), optimizer, state, resolved,
                                       data->prepared.tokenizer.serialized());
    last_checkpoint_update = state.update;
    prune_checkpoints(checkpoints_dir, recipe.checkpoint, state.best_update);
    spdlog::info("checkpoint {}", last_checkpoint);
  };
  auto validate = [&] {
    last_eval = evaluate(model, *data->valid, recipe.validation.max_batches, data->unigram.get());
    last_validation = state.update;
    const bool best = last_eval.loss() < state.best_valid_loss;
    if (best) {
      state.best_valid_loss = last_eval.loss();
      state.best_update = state.update;
      state.validations_since_best = 0;
    } else {
      ++state.validations_since_best;
    }
    MetricsRow row;
    row.kind = "valid";
    row.update = state.update;
    row.tokens = state.tokens;
    row.epoch = data->train->state().epoch;
    row.lr = learning_rate(recipe.optim, max_updates, std::max<int64_t>(state.update, 1));
    row.loss = last_eval.loss();
    row.perplexity = last_eval.perplexity();
    row.accuracy = last_eval.accuracy();
    row.unigram_perplexity = last_eval.unigram_perplexity();
    row.elapsed_seconds = elapsed();
    metrics.append(row);
    spdlog::info("valid | update {} | loss {:.4f} | ppl {:.2f} ({:.3f} × unigram {:.2f}) | acc {:.4f} | {} masked tokens{}",
                 state.update, row.loss, row.perplexity, row.perplexity / row.unigram_perplexity,
                 row.unigram_perplexity, row.accuracy, last_eval.masked, best ? " | best" : "");
    return best;
  };

  auto stop_reason = [&]() -> std::string {
    if (max_updates > 0 && state.update >= max_updates) return fmt::format("reached train.max_updates = {}", max_updates);
    if (t.max_tokens > 0 && state.tokens >= t.max_tokens) return fmt::format("reached train.max_tokens = {}", t.max_tokens);
    if (t.max_minutes > 0 && elapsed() >= 60 * t.max_minutes)
      return fmt::format("reached train.max_minutes = {}", t.max_minutes);
    if (recipe.validation.patience > 0 && state.validations_since_best >= recipe.validation.patience)
      return fmt::format("early stopping: {} validations without improvement", recipe.validation.patience);
    if (stop_requested()) return fmt::format("received {}", stop_signal_name());
    return "";
  };

  std::string reason = stop_reason();
  if (!resume_from.empty() && !reason.empty() && !stop_requested()) {
    // A finished run resumed: nothing to train, and no row or checkpoint to add.
    last_eval = evaluate(model, *data->valid, recipe.validation.max_batches, data->unigram.get());
    spdlog::info("{} already finished at update {} ({}): nothing to do", run_dir, state.update, reason);
    summary.updates = state.update;
    summary.valid_loss = last_eval.loss();
    summary.valid_perplexity = last_eval.perplexity();
    summary.valid_accuracy = last_eval.accuracy();
    summary.valid_unigram_perplexity = last_eval.unigram_perplexity();
    summary.last_checkpoint = resume_from;
    return summary;
  }
  while (reason.empty()) {
    // ---- one update ----------------------------------------------------------------------
    int64_t masked = 0;
    for (auto& batch : micro) {
      data->train->next(batch);
      masked += batch.targets();
    }
    model.params().zero_grads();
    const float grad_scale = masked > 0 ? 1.0f / static_cast<float>(masked) : 0.0f;
    for (auto& batch : micro) {
      const Pass pass{true, static_cast<uint64_t>(recipe.seed), static_cast<uint64_t>(state.micro_step++)};
      for (int32_t length : batch.lengths) state.tokens += length, interval_tokens += length;
      if (batch.targets() == 0) continue;
      const StepResult r = model.forward_backward(model_view(batch, positions), pass, grad_scale);
      interval_loss += r.loss_sum;
      interval_masked += r.masked;
      interval_correct += r.correct;
    }
    const double norm = gradient_norm(model.params());
    if (!std::isfinite(norm))
      LF_FAIL("update {}: the gradient norm is {} (loss diverged); lower optim.lr or resume from an earlier checkpoint",
              state.update + 1, norm);
    if (recipe.optim.clip_norm > 0 && norm > recipe.optim.clip_norm)
      scale_gradients(model.params(), static_cast<float>(recipe.optim.clip_norm / norm));
    const double lr = learning_rate(recipe.optim, max_updates, state.update + 1);
    optimizer.step(lr);
    ++state.update;

    // ---- logs, validation, checkpoints -----------------------------------------------------
    if (state.update % recipe.logging.every == 0) {
      const double seconds = std::chrono::duration<double>(Clock::now() - interval_start).count();
      MetricsRow row;
      row.kind = "train";
      row.update = state.update;
      row.tokens = state.tokens;
      row.epoch = data->train->state().epoch;
      row.lr = lr;
      row.loss = interval_masked ? interval_loss / static_cast<double>(interval_masked) : 0.0;
      row.perplexity = std::exp(row.loss);
      row.accuracy = interval_masked ? static_cast<double>(interval_correct) / static_cast<double>(interval_masked) : 0.0;
      row.grad_norm = norm;
      row.tokens_per_second = static_cast<double>(interval_tokens) / seconds;
      row.elapsed_seconds = elapsed();
      metrics.append(row);
      std::string eta;
      if (max_updates > 0) {
        const double per_update = seconds / recipe.logging.every;
        eta = " | ETA " + format_duration(per_update * static_cast<double>(max_updates - state.update));
      }
      spdlog::info("update {}{} | lr {:.3g} | loss {:.4f} | ppl {:.2f} | acc {:.3f} | gnorm {:.3f} | {:.0f} tok/s{}",
                   state.update, max_updates > 0 ? fmt::format("/{}", max_updates) : "", lr, row.loss,
                   row.perplexity, row.accuracy, norm, row.tokens_per_second, eta);
      interval_loss = 0;
      interval_masked = interval_correct = interval_tokens = 0;
      interval_start = Clock::now();
    }
    bool best = false;
    if (recipe.validation.every > 0 && state.update % recipe.validation.every == 0) best = validate();
    if ((recipe.checkpoint.every > 0 && state.update % recipe.checkpoint.every == 0) ||
        (best && recipe.checkpoint.keep_best))
      checkpoint();
    reason = stop_reason();
  }

  // ---- the end: a final validation and checkpoint unless this update just had them -----------
  summary.interrupted = stop_requested();
  spdlog::info("stopping at update {}: {}", state.update, reason);
  if (last_validation != state.update) validate();
  if (last_checkpoint_update != state.update) checkpoint();
  summary.updates = state.update;
  summary.valid_loss = last_eval.loss();
  summary.valid_perplexity = last_eval.perplexity();
  summary.valid_accuracy = last_eval.accuracy();
  summary.valid_unigram_perplexity = last_eval.unigram_perplexity();
  summary.last_checkpoint = last_checkpoint;
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

#include "linformer/finetune/finetuner.h"

#include "linformer/config/recipe_loader.h"
#include "linformer/core/check.h"
#include "linformer/core/file_lock.h"
#include "linformer/core/fs.h"
#include "linformer/core/signals.h"
#include "linformer/core/thread_placement.h"
#include "linformer/data/labelled.h"
#include "linformer/finetune/classification_eval.h"
#include "linformer/model/classifier_model.h"
#include "linformer/model/memory_estimate.h"
#include "linformer/nn/weights_file.h"
#include "linformer/optim/adamw.h"
#include "linformer/optim/lr_schedule.h"
#include "linformer/train/checkpoint.h"
#include "linformer/train/metrics_log.h"
#include "linformer/train/resume_plan.h"
#include "linformer/train/run_directory.h"
#include "linformer/train/run_schedule.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>

namespace linformer {

namespace fs = std::filesystem;

namespace {

constexpr const char* kHeadPrefix = "classifier.";
constexpr const char* kRandomEncoder = "none";

// The recipe as fine-tuning reads it: finetune.checkpoint from the command line, the keys it
// needs present, the ones it does not support refused.
config::Recipe load_finetune_recipe(const FinetuneOptions& options) {
  config::Recipe recipe = config::load_recipe(options.recipe_path, options.overrides);
  if (!options.checkpoint.empty()) recipe.finetune.checkpoint = options.checkpoint;
  std::vector<std::string> problems;
  if (recipe.finetune.checkpoint.empty())
    problems.push_back("finetune.checkpoint is empty: give --checkpoint DIR (a pretraining checkpoint), or \"none\" "
                       "for a randomly initialised encoder");
  if (recipe.finetune.train.empty()) problems.push_back("finetune.train is empty: name the labelled training file");
  if (recipe.finetune.valid.empty()) problems.push_back("finetune.valid is empty: name the labelled validation file");
  if (recipe.train.accumulation != 1)
    problems.push_back(fmt::format("train.accumulation = {}: fine-tuning updates once per batch (set it to 1)",
                                   recipe.train.accumulation));
  if (recipe.train.short_seq_len > 0)
    problems.push_back(fmt::format("train.short_seq_len = {}: the sequence-length warm-up is for pretraining (set it "
                                   "to 0)",
                                   recipe.train.short_seq_len));
  if (!problems.empty()) {
    std::string message = options.recipe_path + ": cannot fine-tune with this recipe:";
    for (const auto& p : problems) message += "\n  " + p;
    throw Error(message);
  }
  return recipe;
}

std::string checkpoint_file(const std::string& checkpoint, const char* name) {
  return (fs::path(checkpoint) / name).string();
}

// The tokenizer and model the encoder comes from. A pretrained checkpoint brings both: its model
// shape, n and vocabulary replace the recipe's (which the log names when they differ), its
// dropout rates do not. A random encoder ("none") is the recipe's, with the prepared data's
// tokenizer.
data::Tokenizer resolve_encoder(config::Recipe& recipe) {
  if (recipe.finetune.checkpoint != kRandomEncoder)
    recipe.finetune.checkpoint = resolve_checkpoint(recipe.finetune.checkpoint);  // the run recipe names the one used
  const std::string& checkpoint = recipe.finetune.checkpoint;
  if (checkpoint == kRandomEncoder) {
    const std::string path = (fs::path(recipe.data.prepared_dir) / "spm.model").string();
    if (!fs::exists(path))
      LF_FAIL("finetune.checkpoint = \"none\" takes the tokenizer of data.prepared_dir, but {} does not exist (run "
              "linformer prepare with the recipe first)",
              path);
    data::Tokenizer tokenizer = data::Tokenizer::load(path);
    if (tokenizer.vocab_size() != recipe.data.vocab_size)
      LF_FAIL("{} has {} pieces but data.vocab_size is {}", path, tokenizer.vocab_size(), recipe.data.vocab_size);
    return tokenizer;
  }
  verify_checkpoint(checkpoint);
  const ModelSpec stored = read_weights_spec(checkpoint_file(checkpoint, "model.safetensors"));
  const auto differences = differing_model_keys(stored, ModelSpec::from_recipe(recipe));
  if (!differences.empty()) {
    std::string keys;
    for (const auto& d : differences) keys += "\n  " + d;
    spdlog::info("the pretrained model of {} replaces the recipe's [model] in:{}", checkpoint, keys);
  }
  config::ModelConfig model = stored;
  model.dropout = recipe.model.dropout;
  model.attention_dropout = recipe.model.attention_dropout;
  model.activation_dropout = recipe.model.activation_dropout;
  recipe.model = model;
  recipe.data.seq_len = stored.seq_len;
  recipe.data.vocab_size = stored.vocab_size;
  return data::Tokenizer::load(checkpoint_file(checkpoint, "tokenizer.model"));
}

void log_set(const char* split, const data::LabelledSet& set) {
  std::string counts;
  const auto per_label = set.label_counts();
  for (size_t l = 0; l < set.labels.size(); ++l)
    counts += fmt::format("{}{} {}", l ? ", " : "", set.labels[l], per_label[l]);
  spdlog::info("{} {}: {} documents ({}), {} tokens, {} cut to the model's length", split, set.path, set.size(), counts,
               set.tokens.size(), set.truncated);
}

// The metrics row of an evaluation.
MetricsRow scores_row(const char* kind, const ClassificationScores& s, const TrainingState& state, double elapsed) {
  MetricsRow row;
  row.kind = kind;
  row.update = state.update;
  row.tokens = state.tokens;
  row.epoch = state.epoch;
  row.loss = s.loss();
  row.perplexity = std::exp(row.loss);
  row.accuracy = s.accuracy();
  row.macro_f1 = s.macro_f1();
  row.elapsed_seconds = elapsed;
  return row;
}

// The training interval in progress, kept in the state so a resumed run's rows are the same.
MetricsRow take_train_row(TrainingState& state, double lr, double grad_norm, double seconds, double elapsed) {
  IntervalSums& i = state.interval;
  MetricsRow row;
  row.kind = "train";
  row.update = state.update;
  row.tokens = state.tokens;
  row.epoch = state.epoch;
  row.lr = lr;
  row.loss = i.masked ? i.loss_sum / static_cast<double>(i.masked) : 0.0;
  row.perplexity = std::exp(row.loss);
  row.accuracy = i.masked ? static_cast<double>(i.correct) / static_cast<double>(i.masked) : 0.0;
  row.grad_norm = grad_norm;
  row.tokens_per_second = seconds > 0 ? static_cast<double>(i.tokens) / seconds : 0.0;
  row.elapsed_seconds = elapsed;
  i = {};
  return row;
}

std::string resume_command(const FinetuneOptions& options, const config::Recipe& recipe, const std::string& run_dir) {
  std::string command = "linformer finetune --recipe " + shell_quoted(options.recipe_path);
  for (const auto& o : options.overrides) command += " --set " + shell_quoted(o);
  return command + " --checkpoint " + shell_quoted(recipe.finetune.checkpoint) + " --run-dir " + shell_quoted(run_dir) +
         " --resume auto";
}

FinetuneSummary finetune_in(const std::string& run_dir, config::Recipe recipe, const ResumePlan& plan,
                            const FinetuneOptions& options) {
  const data::Tokenizer tokenizer = resolve_encoder(recipe);
  const ModelSpec spec = ModelSpec::from_recipe(recipe);
  const data::LabelledFileOptions read{recipe.finetune.text_field, recipe.finetune.label_field, spec.seq_len};
  const data::LabelledSet train = data::read_labelled_file(recipe.finetune.train, tokenizer, read, recipe.finetune.labels);
  const data::LabelledSet valid = data::read_labelled_file(recipe.finetune.valid, tokenizer, read, train.labels);
  const data::LabelledSet test = recipe.finetune.test.empty()
                                     ? data::LabelledSet{}
                                     : data::read_labelled_file(recipe.finetune.test, tokenizer, read, train.labels);
  const int B = recipe.train.batch_size;
  data::LabelledBatcher batches(train, B, /*shuffle=*/true, static_cast<uint64_t>(recipe.seed));
  // The resolved recipe records the labels and the number of updates.
  recipe.finetune.labels = train.labels;
  recipe.train.max_updates = static_cast<int>(recipe.finetune.epochs * batches.batches_per_epoch());
  const std::string resolved = config::dump_recipe(recipe);
  start_run_directory(run_dir, recipe, resolved);
  log_set("train", train);
  log_set("valid", valid);
  if (test.size()) log_set("test", test);

  const auto L = static_cast<int64_t>(train.labels.size());
  check_memory_fits(spec, B, B, WorkspaceUse::training, "fine-tuning",
                    fmt::format("model.layers = {}, model.d_model = {}, train.batch_size = {} and data.seq_len = {}",
                                spec.layers, spec.d_model, B, spec.seq_len));
  ClassifierModel model(spec, L, B, static_cast<float>(recipe.finetune.classifier_dropout),
                        recipe.finetune.freeze_encoder);
  model.params().initialize(static_cast<uint64_t>(recipe.seed));
  if (!plan.resumes() && recipe.finetune.checkpoint != kRandomEncoder) {
    const auto unused = load_shared_weights(checkpoint_file(recipe.finetune.checkpoint, "model.safetensors"),
                                            model.params(), kHeadPrefix);
    spdlog::info("encoder loaded from {} ({} of its tensors not used: the pretraining head)",
                 recipe.finetune.checkpoint, unused.size());
  } else if (!plan.resumes()) {
    spdlog::info("encoder randomly initialised (finetune.checkpoint = \"none\")");
  }
  AdamW optimizer(model.params(), recipe.optim);
  TrainingState state = load_resume_point(plan, spec, model.params(), optimizer);
  const DataIdentity identity{fmt::format("{:016x}", tokenizer.hash()), "", static_cast<uint64_t>(train.tokens.size()),
                              {{"finetune.train", recipe.finetune.train},
                               {"seed", std::to_string(recipe.seed)},
                               {"train.batch_size", std::to_string(B)}}};
  if (plan.resumes() && state.data.known() &&
      (state.data.tokenizer_hash != identity.tokenizer_hash || state.data.order_keys != identity.order_keys ||
       state.data.train_tokens != identity.train_tokens))
    LF_FAIL("cannot resume from {}: it was fine-tuned on other data (the training file, its tokens, the tokenizer, seed "
            "or batch size differ)",
            plan.checkpoint);
  batches.set_state({state.epoch, state.position});
  MetricsLog metrics(run_dir, state.update);
  RunCheckpoints checkpoints(checkpoint_file(run_dir, "checkpoints"), recipe.checkpoint, resolved,
                             tokenizer.serialized(), identity);
  const RunClock clock(state.elapsed_seconds);
  auto save = [&] { checkpoints.write(model.params(), optimizer, state, batches.state(), clock.elapsed()); };
  spdlog::info("model: {} parameters{}, {} labels; {} updates ({} epochs of {} batches of {})", model.params().count(),
               recipe.finetune.freeze_encoder ? " (encoder frozen)" : "", L, recipe.train.max_updates,
               recipe.finetune.epochs, batches.batches_per_epoch(), B);

  const int64_t total = recipe.train.max_updates;
  FinetuneSummary summary;
  summary.run_dir = run_dir;
  const bool early_stopped =
      recipe.validation.patience > 0 && state.validations_since_best >= recipe.validation.patience;
  if (plan.resumes() && (state.update >= total || early_stopped)) {
    spdlog::info("{} already finished at update {}: nothing to do", run_dir, state.update);
    summary.updates = state.update;
    summary.last_checkpoint = plan.checkpoint;
    return summary;
  }
  const int64_t start_update = state.update;
  data::LabelledBatch batch;
  ClassificationScores last_valid;
  double interval_start = clock.elapsed();
  while (state.update < total && !stop_requested()) {
    batches.next(batch);
    const Pass pass{true, static_cast<uint64_t>(recipe.seed), static_cast<uint64_t>(state.micro_step++)};
    model.params().zero_grads();
    const ClassifierResult r = model.forward_backward(
        {batch.rows, batch.seq_len, batch.ids.data(), batch.lengths.data(), batch.labels.data()}, pass,
        1.0f / static_cast<float>(batch.rows));
    const double grad_norm = gradient_norm(model.params());
    if (!std::isfinite(grad_norm))
      LF_FAIL("update {}: the gradient norm is {} (loss diverged); lower optim.lr", state.update + 1, grad_norm);
    if (recipe.optim.clip_norm > 0 && grad_norm > recipe.optim.clip_norm)
      scale_gradients(model.params(), static_cast<float>(recipe.optim.clip_norm / grad_norm));
    const double lr = learning_rate(recipe.optim, total, state.update + 1);
    optimizer.step(lr);
    ++state.update;
    int64_t tokens = 0;
    for (int32_t length : batch.lengths) tokens += length;
    state.tokens += tokens;
    state.interval.loss_sum += r.loss_sum;
    state.interval.masked += r.documents;  // fine-tuning counts documents here
    state.interval.correct += r.correct;
    state.interval.tokens += tokens;
    ++state.interval.updates;
    state.epoch = batches.state().epoch;
    const bool epoch_end = batches.state().position == 0;
    if (state.update % recipe.logging.every == 0 || epoch_end) {
      const double now = clock.elapsed();
      const MetricsRow row = take_train_row(state, lr, grad_norm, now - interval_start, now);
      interval_start = now;
      metrics.append(row);
      spdlog::info("update {}/{} | epoch {} | lr {:.3g} | loss {:.4f} | acc {:.3f} | gnorm {:.3f} | {:.0f} tok/s",
                   row.update, total, state.epoch + (epoch_end ? 0 : 1), row.lr, row.loss, row.accuracy, row.grad_norm,
                   row.tokens_per_second);
    }
    if (!epoch_end) continue;
    const ClassificationScores& s = last_valid = evaluate_classifier(model, valid, B);
    const bool best = s.loss() < state.best_valid_loss;
    if (best) state.best_valid_loss = s.loss(), state.best_update = state.update, state.validations_since_best = 0;
    else ++state.validations_since_best;
    metrics.append(scores_row("valid", s, state, clock.elapsed()));
    spdlog::info("epoch {} | valid loss {:.4f} | accuracy {:.4f} | macro F1 {:.4f}{}", state.epoch, s.loss(),
                 s.accuracy(), s.macro_f1(), best ? " (best)" : "");
    save();
    if (recipe.validation.patience > 0 && state.validations_since_best >= recipe.validation.patience) {
      spdlog::info("early stop: {} epochs without a lower validation loss", state.validations_since_best);
      break;
    }
  }

  summary.updates = state.update;
  summary.best_update = state.best_update;
  summary.interrupted = stop_requested();
  if (checkpoints.last_update() != state.update && state.update != start_update) save();
  summary.last_checkpoint = checkpoints.last_update() >= 0 ? checkpoints.last_path() : plan.checkpoint;
  if (summary.interrupted) {
    spdlog::warn("interrupted by {} at update {}; continue with: {}", stop_signal_name(), state.update,
                 resume_command(options, recipe, run_dir));
    return summary;
  }

  // The best epoch's weights, for its scores and the test file.
  std::string best_path;
  for (const auto& c : list_checkpoints(checkpoint_file(run_dir, "checkpoints")))
    if (c.update == state.best_update) best_path = c.path;
  if (best_path.empty()) {
    spdlog::warn("the best epoch's checkpoint (update {}) is not kept (checkpoint.keep_best = false): scoring the last "
                 "weights",
                 state.best_update);
  } else if (state.best_update != state.update) {
    read_checkpoint(best_path, model.params(), nullptr);
  }
  const ClassificationScores best_valid =
      state.best_update == state.update && last_valid.documents ? last_valid : evaluate_classifier(model, valid, B);
  summary.best_valid_accuracy = best_valid.accuracy();
  summary.best_valid_macro_f1 = best_valid.macro_f1();
  nlohmann::json results = {{"labels", train.labels},
                            {"best_update", state.best_update},
                            {"updates", state.update},
                            {"valid", {{"accuracy", best_valid.accuracy()},
                                       {"macro_f1", best_valid.macro_f1()},
                                       {"loss", best_valid.loss()},
                                       {"confusion", best_valid.confusion}}},
                            {"elapsed_seconds", clock.elapsed()}};
  if (test.size()) {
    const ClassificationScores s = evaluate_classifier(model, test, B);
    summary.test_accuracy = s.accuracy();
    summary.test_macro_f1 = s.macro_f1();
    metrics.append(scores_row("test", s, state, clock.elapsed()));
    results["test"] = {{"accuracy", s.accuracy()}, {"macro_f1", s.macro_f1()}, {"loss", s.loss()},
                       {"confusion", s.confusion}};
    spdlog::info("test (best epoch's weights, update {}): accuracy {:.4f}, macro F1 {:.4f}, loss {:.4f}",
                 state.best_update, s.accuracy(), s.macro_f1(), s.loss());
  }
  write_file_atomic(checkpoint_file(run_dir, "results.json"), results.dump(2) + "\n");
  spdlog::info("best validation accuracy {:.4f} (macro F1 {:.4f}) at update {}; results in {}/results.json, metrics in "
               "{}",
               summary.best_valid_accuracy, summary.best_valid_macro_f1, state.best_update, run_dir, metrics.csv_path());
  return summary;
}

}  // namespace

FinetuneSummary run_finetuning(const FinetuneOptions& options) {
  install_stop_handlers();
  const config::Recipe recipe = load_finetune_recipe(options);
  const std::string run_dir = options.run_dir.empty() ? (fs::path("runs") / recipe.name).string() : options.run_dir;
  const OpenmpTeam openmp_team(recipe.threads);  // pinned until the command returns
  create_directories_or_fail(run_dir);
  const FileLock lock(checkpoint_file(run_dir, "run.lock"), fmt::format("run directory '{}'", run_dir));
  TrainOptions plan_options;
  plan_options.recipe_path = options.recipe_path;
  plan_options.run_dir = run_dir;
  plan_options.resume = options.resume;
  const ResumePlan plan = plan_resume(plan_options, run_dir);
  try {
    return finetune_in(run_dir, recipe, plan, options);
  } catch (const Error& e) {
    const auto saved = list_checkpoints(checkpoint_file(run_dir, "checkpoints"));
    throw Error(fmt::format("{}\nthe run's newest checkpoint is {}; once the cause is fixed, continue with: {}", e.what(),
                            saved.empty() ? "none (the run starts again)" : saved.back().path,
                            resume_command(options, recipe, run_dir)));
  }
}

}  // namespace linformer

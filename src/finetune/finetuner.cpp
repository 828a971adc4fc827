#include "linformer/finetune/finetuner.h"

#include "linformer/config/recipe_loader.h"
#include "linformer/core/check.h"
#include "linformer/core/file_lock.h"
#include "linformer/core/fs.h"
#include "linformer/core/signals.h"
#include "linformer/core/thread_placement.h"
#include "linformer/core/world.h"
#include "linformer/data/labelled.h"
#include "linformer/finetune/classification_eval.h"
#include "linformer/finetune/classification_job.h"
#include "linformer/model/classifier_model.h"
#include "linformer/model/memory_estimate.h"
#include "linformer/nn/weights_file.h"
#include "linformer/optim/adamw.h"
#include "linformer/train/checkpoint.h"
#include "linformer/train/metrics_log.h"
#include "linformer/train/resume_plan.h"
#include "linformer/train/run_directory.h"
#include "linformer/train/training_loop.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace linformer {

namespace fs = std::filesystem;

namespace {

constexpr const char* kHeadPrefix = "classifier.";
constexpr const char* kRandomEncoder = "none";

// The recipe as fine-tuning reads it: finetune.checkpoint from the command line, the keys it
// needs present, the ones that mean nothing for a classifier refused (each named).
config::Recipe load_finetune_recipe(const FinetuneOptions& options) {
  config::Recipe recipe = config::load_recipe(options.recipe_path, options.overrides);
  if (!options.checkpoint.empty()) recipe.finetune.checkpoint = options.checkpoint;
  std::vector<std::string> problems;
  if (recipe.finetune.checkpoint.empty())
    problems.push_back(
        "finetune.checkpoint is empty: give --checkpoint DIR (a pretraining checkpoint), or \"none\" "
        "for a randomly initialised encoder");
  if (recipe.finetune.train.empty()) problems.push_back("finetune.train is empty: name the labelled training file");
  if (recipe.finetune.valid.empty()) problems.push_back("finetune.valid is empty: name the labelled validation file");
  if (recipe.train.short_seq_len > 0)
    problems.push_back(
        fmt::format("train.short_seq_len = {}: the sequence-length warm-up is for pretraining (set it "
                    "to 0)",
                    recipe.train.short_seq_len));
  if (recipe.validation.mask_probability > 0)
    problems.push_back(
        fmt::format("validation.mask_probability = {}: a classifier's validation masks nothing (set it "
                    "to 0)",
                    recipe.validation.mask_probability));
  if (recipe.validation.shuffle_words)
    problems.push_back("validation.shuffle_words = true: shuffled-word scores are pretraining's (set it to false)");
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

// The tokenizer and model the encoder comes from. Resumed, the fine-tuning checkpoint brings both
// (the pretraining checkpoint may be gone by then). Otherwise a pretrained checkpoint brings both:
// its model shape, n and vocabulary replace the recipe's (which the log names when they differ),
// its dropout rates do not. A random encoder ("none") is the recipe's, with the prepared data's
// tokenizer.
data::Tokenizer resolve_encoder(config::Recipe& recipe, const ResumePlan& plan) {
  if (!plan.resumes() && recipe.finetune.checkpoint != kRandomEncoder)
    recipe.finetune.checkpoint = resolve_checkpoint(recipe.finetune.checkpoint);  // the run recipe names the one used
  const std::string source = plan.resumes() ? plan.checkpoint : recipe.finetune.checkpoint;
  if (source == kRandomEncoder) {
    const std::string path = (fs::path(recipe.data.prepared_dir) / "spm.model").string();
    if (!fs::exists(path))
      LF_FAIL(
          "finetune.checkpoint = \"none\" takes the tokenizer of data.prepared_dir, but {} does not exist (run "
          "linformer prepare with the recipe first)",
          path);
    data::Tokenizer tokenizer = data::Tokenizer::load(path);
    if (tokenizer.vocab_size() != recipe.data.vocab_size)
      LF_FAIL("{} has {} pieces but data.vocab_size is {}", path, tokenizer.vocab_size(), recipe.data.vocab_size);
    return tokenizer;
  }
  verify_checkpoint(source);
  const ModelSpec stored = read_weights_spec(checkpoint_file(source, "model.safetensors"));
  const auto differences = differing_model_keys(stored, ModelSpec::from_recipe(recipe));
  if (!differences.empty() && !plan.resumes()) {
    std::string keys;
    for (const auto& d : differences) keys += "\n  " + d;
    spdlog::info("the pretrained model of {} replaces the recipe's [model] in:{}", source, keys);
  }
  config::ModelConfig model = stored;
  model.dropout = recipe.model.dropout;
  model.attention_dropout = recipe.model.attention_dropout;
  model.activation_dropout = recipe.model.activation_dropout;
  recipe.model = model;
  recipe.data.seq_len = stored.seq_len;
  recipe.data.vocab_size = stored.vocab_size;
  return data::Tokenizer::load(checkpoint_file(source, "tokenizer.model"));
}

void log_set(const char* split, const data::LabelledSet& set) {
  std::string counts;
  const auto per_label = set.label_counts();
  for (size_t l = 0; l < set.labels.size(); ++l)
    counts += fmt::format("{}{} {}", l ? ", " : "", set.labels[l], per_label[l]);
  spdlog::info("{} {}: {} documents ({}), {} tokens, {} cut to the model's length", split, set.path, set.size(), counts,
               set.tokens.size(), set.truncated);
}

std::string resume_command(const FinetuneOptions& options, const config::Recipe& recipe, const std::string& run_dir) {
  std::string command = "linformer finetune --recipe " + shell_quoted(options.recipe_path);
  for (const auto& o : options.overrides) command += " --set " + shell_quoted(o);
  return command + " --checkpoint " + shell_quoted(recipe.finetune.checkpoint) + " --run-dir " + shell_quoted(run_dir) +
         " --resume auto";
}

// The labelled files of a run, read with the tokenizer; the validation and test labels must be
// the training file's (or finetune.labels, in that order).
struct LabelledData {
  data::LabelledSet train, valid, test;
};

LabelledData read_labelled_data(const config::Recipe& recipe, const data::Tokenizer& tokenizer, int seq_len) {
  const data::LabelledFileOptions read{recipe.finetune.text_field, recipe.finetune.label_field, seq_len};
  LabelledData d;
  d.train = data::read_labelled_file(recipe.finetune.train, tokenizer, read, recipe.finetune.labels);
  d.valid = data::read_labelled_file(recipe.finetune.valid, tokenizer, read, d.train.labels);
  if (!recipe.finetune.test.empty())
    d.test = data::read_labelled_file(recipe.finetune.test, tokenizer, read, d.train.labels);
  return d;
}

// What a fine-tuning checkpoint's counters rest on: the tokenizer, the training file's tokens and
// the keys that order, batch and label it (a reordered label list would swap the classes).
DataIdentity finetune_identity(const config::Recipe& recipe, const data::Tokenizer& tokenizer,
                               const data::LabelledSet& train) {
  std::string labels;
  for (const auto& l : train.labels) labels += (labels.empty() ? "" : ",") + nlohmann::json(l).dump();
  return {fmt::format("{:016x}", tokenizer.hash()),
          "",
          static_cast<uint64_t>(train.tokens.size()),
          {{"finetune.train", recipe.finetune.train},
           {"finetune.labels", "[" + labels + "]"},
           {"seed", std::to_string(recipe.seed)},
           {"train.batch_size", std::to_string(recipe.train.batch_size)},
           {"train.accumulation", std::to_string(recipe.train.accumulation)}}};
}

// A classification's metrics row with the run's counters.
MetricsRow scores_row(const char* kind, const ClassificationScores& s, const TrainingState& state, double elapsed) {
  MetricsRow row = classification_row(s);
  row.kind = kind;
  row.update = state.update;
  row.tokens = state.tokens;
  row.epoch = state.epoch;
  row.elapsed_seconds = elapsed;
  return row;
}

nlohmann::json scores_json(const ClassificationScores& s) {
  return {{"accuracy", s.accuracy()}, {"macro_f1", s.macro_f1()}, {"loss", s.loss()}, {"confusion", s.confusion}};
}

// The end of a finished run: the best epoch's weights scored on the validation and test files,
// results.json written last (its absence makes a resumed run score again: a kill during this
// step loses nothing).
void score_best(ClassifierModel& model, const LabelledData& data, const config::Recipe& recipe,
                const std::string& run_dir, const TrainingState& state, MetricsLog& metrics, FinetuneSummary& summary) {
  const int B = recipe.train.batch_size;
  std::string best_path;
  for (const auto& c : list_checkpoints(checkpoint_file(run_dir, "checkpoints")))
    if (c.update == state.best_update) best_path = c.path;
  if (best_path.empty())
    spdlog::warn(
        "the best validation's checkpoint (update {}) is not kept (checkpoint.keep_best = false): scoring "
        "the last weights",
        state.best_update);
  else
    read_checkpoint(best_path, model.params(), nullptr);
  const ClassificationScores valid = evaluate_classifier(model, data.valid, B);
  summary.best_valid_accuracy = valid.accuracy();
  summary.best_valid_macro_f1 = valid.macro_f1();
  nlohmann::json results = {{"labels", data.train.labels},
                            {"best_update", state.best_update},
                            {"updates", state.update},
                            {"valid", scores_json(valid)},
                            {"elapsed_seconds", state.elapsed_seconds}};
  if (data.test.size()) {
    const ClassificationScores test = evaluate_classifier(model, data.test, B);
    summary.test_accuracy = test.accuracy();
    summary.test_macro_f1 = test.macro_f1();
    metrics.append(scores_row("test", test, state, state.elapsed_seconds));
    results["test"] = scores_json(test);
    spdlog::info("test (the best validation's weights, update {}): accuracy {:.4f}, macro F1 {:.4f}, loss {:.4f}",
                 state.best_update, test.accuracy(), test.macro_f1(), test.loss());
  }
  write_file_atomic(checkpoint_file(run_dir, "results.json"), results.dump(2) + "\n");
  spdlog::info(
      "best validation accuracy {:.4f} (macro F1 {:.4f}) at update {}; results in {}/results.json, metrics in "
      "{}",
      summary.best_valid_accuracy, summary.best_valid_macro_f1, state.best_update, run_dir, metrics.csv_path());
}

// The classifier of a run: the encoder loaded from the pretrained checkpoint for a fresh run
// (a resumed one loads the fine-tuning checkpoint instead), a new head.
std::unique_ptr<ClassifierModel> make_classifier(const config::Recipe& recipe, const ModelSpec& spec, int64_t labels,
                                                 const ResumePlan& plan) {
  const int B = recipe.train.batch_size;
  check_memory_fits(spec, B, B, WorkspaceUse::training, "fine-tuning",
                    fmt::format("model.layers = {}, model.d_model = {}, train.batch_size = {} and data.seq_len = {}",
                                spec.layers, spec.d_model, B, spec.seq_len));
  auto model = std::make_unique<ClassifierModel>(
      spec, labels, B, static_cast<float>(recipe.finetune.classifier_dropout), recipe.finetune.freeze_encoder);
  model->params().initialize(static_cast<uint64_t>(recipe.seed));
  if (plan.resumes()) return model;
  if (recipe.finetune.checkpoint == kRandomEncoder) {
    spdlog::info("encoder randomly initialised (finetune.checkpoint = \"none\")");
    return model;
  }
  const auto unused = load_shared_weights(checkpoint_file(recipe.finetune.checkpoint, "model.safetensors"),
                                          model->params(), kHeadPrefix);
  spdlog::info("encoder loaded from {} ({} of its tensors not used: the pretraining head)", recipe.finetune.checkpoint,
               unused.size());
  return model;
}

FinetuneSummary finetune_in(const std::string& run_dir, config::Recipe recipe, const ResumePlan& plan,
                            const FinetuneOptions& options) {
  const data::Tokenizer tokenizer = resolve_encoder(recipe, plan);
  const ModelSpec spec = ModelSpec::from_recipe(recipe);
  const LabelledData data = read_labelled_data(recipe, tokenizer, spec.seq_len);
  recipe.finetune.labels = data.train.labels;  // the resolved recipe records them
  const DataIdentity identity = finetune_identity(recipe, tokenizer, data.train);
  check_resume_data(plan, identity, recipe.finetune.train);
  const std::string resolved = config::dump_recipe(recipe);
  start_run_directory(run_dir, recipe, resolved);
  log_set("train", data.train);
  log_set("valid", data.valid);
  if (data.test.size()) log_set("test", data.test);

  const auto model = make_classifier(recipe, spec, static_cast<int64_t>(data.train.labels.size()), plan);
  AdamW optimizer(model->params(), recipe.optim);
  const TrainingState state = load_resume_point(plan, spec, model->params(), optimizer);
  const bool scored = fs::exists(checkpoint_file(run_dir, "results.json"));
  MetricsLog metrics(run_dir, state.update, /*writes=*/true, scored ? "" : "test");
  RunCheckpoints checkpoints(checkpoint_file(run_dir, "checkpoints"), recipe.checkpoint, resolved,
                             tokenizer.serialized(), identity);
  ClassificationJob job(*model, data.train, data.valid, recipe);
  spdlog::info("model: {} parameters{}, {} labels; batches of {}, {} an epoch", model->params().count(),
               recipe.finetune.freeze_encoder ? " (encoder frozen)" : "", data.train.labels.size(),
               recipe.train.batch_size, job.batches_per_epoch());

  const LoopOutcome outcome = run_training_loop(job, optimizer, state, plan, recipe, {checkpoints, metrics});
  FinetuneSummary summary;
  summary.run_dir = run_dir;
  summary.updates = outcome.state.update;
  summary.best_update = outcome.state.best_update;
  summary.interrupted = outcome.interrupted;
  summary.last_checkpoint = outcome.last_checkpoint;
  if (outcome.interrupted) {
    spdlog::warn("interrupted by {} at update {}; continue with: {}", agreed_stop_signal(), outcome.state.update,
                 resume_command(options, recipe, run_dir));
    return summary;
  }
  if (outcome.already_finished && scored) return summary;
  if (outcome.already_finished) spdlog::info("{}/results.json is missing: scoring the best weights again", run_dir);
  score_best(*model, data, recipe, run_dir, outcome.state, metrics, summary);
  return summary;
}

}  // namespace

FinetuneSummary run_finetuning(const FinetuneOptions& options) {
  install_stop_handlers();
  if (World::distributed())
    LF_FAIL(
        "linformer finetune runs in one process (its labelled sets are small enough that one machine's cores "
        "train on them in minutes); run it without mpirun");
  const config::Recipe recipe = load_finetune_recipe(options);
  const std::string run_dir = options.run_dir.empty() ? (fs::path("runs") / recipe.name).string() : options.run_dir;
  const OpenmpTeam openmp_team(recipe.threads);  // pinned until the command returns
  create_directories_or_fail(run_dir);
  const FileLock lock(checkpoint_file(run_dir, "run.lock"), fmt::format("run directory '{}'", run_dir));
  const ResumePlan plan = plan_resume({options.resume}, run_dir);
  try {
    return finetune_in(run_dir, recipe, plan, options);
  } catch (const Error& e) {
    const auto saved = list_checkpoints(checkpoint_file(run_dir, "checkpoints"));
    throw Error(fmt::format("{}\nthe run's newest checkpoint is {}; once the cause is fixed, continue with: {}",
                            e.what(), saved.empty() ? "none (the run starts again)" : saved.back().path,
                            resume_command(options, recipe, run_dir)));
  }
}

}  // namespace linformer

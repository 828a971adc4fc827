#include "linformer/train/resume_plan.h"

#include "linformer/core/check.h"
#include "linformer/core/world.h"
#include "linformer/data/tokenizer.h"
#include "linformer/nn/weights_file.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

namespace linformer {

namespace fs = std::filesystem;

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

namespace {
// The newest checkpoint whose files verify; says which ones it passed over and why.
std::string newest_verified(const std::vector<CheckpointInfo>& checkpoints) {
  std::string failures;
  for (auto it = checkpoints.rbegin(); it != checkpoints.rend(); ++it) {
    try {
      verify_checkpoint(it->path);
    } catch (const Error& e) {
      spdlog::warn("--resume auto: passing over damaged checkpoint {}: {}", it->path, e.what());
      failures += fmt::format("\n  {}", e.what());
      continue;
    }
    if (it != checkpoints.rbegin())
      spdlog::warn("--resume auto: resuming from {}, the newest checkpoint that verifies", it->path);
    return it->path;
  }
  throw Error("--resume auto: no checkpoint verifies:" + failures);
}

// Order keys recorded since a later version: a checkpoint without one was written with its default.
const std::map<std::string, std::string>& later_order_key_defaults() {
  static const std::map<std::string, std::string> defaults = {{"train.short_seq_len", "0"},
                                                              {"train.short_seq_updates", "0"}};
  return defaults;
}

// The recipe keys of a data identity that differ from another's.
std::vector<std::string> differing_order_keys(const DataIdentity& stored, const DataIdentity& now) {
  std::vector<std::string> keys;
  for (const auto& [key_now, value_now] : now.order_keys) {
    const auto same_key = [&key = key_now](const auto& entry) { return entry.first == key; };
    const auto it = std::find_if(stored.order_keys.begin(), stored.order_keys.end(), same_key);
    const auto later = later_order_key_defaults().find(key_now);
    if (it == stored.order_keys.end() && later == later_order_key_defaults().end()) continue;
    const std::string& value = it != stored.order_keys.end() ? it->second : later->second;
    if (value != value_now) keys.push_back(fmt::format("{} ({} in the checkpoint, {} now)", key_now, value, value_now));
  }
  return keys;
}
}  // namespace

ResumePlan plan_resume(const ResumeRequest& options, const std::string& run_dir) {
  const std::string checkpoints_dir = (fs::path(run_dir) / "checkpoints").string();
  ResumePlan plan;
  plan.reset_optimizer = options.reset_optimizer;
  plan.reset_schedule = options.reset_schedule;
  plan.reset_data = options.reset_data;
  const auto all = list_checkpoints(checkpoints_dir);
  const bool has_checkpoints = !all.empty();
  if (options.resume == "auto") {
    if (has_checkpoints) plan.checkpoint = newest_verified(all);  // none: a fresh start
  } else if (!options.resume.empty()) {
    if (!fs::exists(fs::path(options.resume) / "DONE"))
      LF_FAIL("--resume {}: not a complete checkpoint directory (no DONE marker)", options.resume);
    plan.checkpoint = options.resume;
  }
  if (options.reset_schedule && has_checkpoints)
    LF_FAIL(
        "--reset-schedule starts the update count again: write into a new --run-dir (resume from "
        "--resume {}/checkpoints/checkpoint_…) so that its checkpoints are not mixed with the old ones",
        run_dir);
  if (options.resume.empty() && has_checkpoints)
    LF_FAIL("run directory '{}' already has checkpoints: continue it with --resume auto, or choose another --run-dir",
            run_dir);
  return plan;
}

void check_resume_data(const ResumePlan& plan, const DataIdentity& now, const std::string& prepared_dir) {
  if (!plan.resumes()) return;
  // The vocabulary: the embeddings' rows mean these token ids, whatever else changes.
  const auto stored_tokenizer = data::Tokenizer::load((fs::path(plan.checkpoint) / "tokenizer.model").string());
  const std::string stored_hash = fmt::format("{:016x}", stored_tokenizer.hash());
  if (stored_hash != now.tokenizer_hash)
    LF_FAIL(
        "cannot resume from {}: its tokenizer (tokenizer.model, hash {}) is not the one of the prepared data in "
        "'{}' (spm.model, hash {}), so its embeddings would be read with another vocabulary's ids; resume with the "
        "data.prepared_dir the run was trained on, or start a new run",
        plan.checkpoint, stored_hash, prepared_dir, now.tokenizer_hash);
  const DataIdentity stored = peek_checkpoint_state(plan.checkpoint).data;
  if (!stored.known() || plan.reset_data) return;  // older checkpoints do not record it
  std::vector<std::string> differences = differing_order_keys(stored, now);
  if (stored.train_checksum != now.train_checksum || stored.train_tokens != now.train_tokens)
    differences.insert(
        differences.begin(),
        fmt::format("the training split of '{}' ({} tokens, crc32 {}; the checkpoint's had {} tokens, "
                    "crc32 {})",
                    prepared_dir, now.train_tokens, now.train_checksum, stored.train_tokens, stored.train_checksum));
  if (differences.empty()) return;
  std::string message =
      fmt::format("cannot resume from {}: its data position points into other data than this run's:", plan.checkpoint);
  for (const auto& d : differences) message += "\n  " + d;
  if (World::distributed())
    message += fmt::format(
        "\n(with {} processes, train.batch_size counts the sequences of all of them: {} × the "
        "recipe's)",
        World::size(), World::size());
  message +=
      "\nresume with the data and settings the run was trained on, or add --reset-data to read this data from "
      "its start";
  throw Error(message);
}

TrainingState load_resume_point(const ResumePlan& plan, const ModelSpec& spec, Parameters& params, AdamW& optimizer) {
  TrainingState state;
  if (!plan.resumes()) return state;
  const ModelSpec stored = read_weights_spec((fs::path(plan.checkpoint) / "model.safetensors").string());
  const auto differences = differing_model_keys(stored, spec);
  if (!differences.empty()) {
    std::string message =
        fmt::format("cannot resume from {}: the recipe's model differs from the checkpoint's:", plan.checkpoint);
    for (const auto& d : differences) message += "\n  " + d;
    throw Error(message);
  }
  state = read_checkpoint(plan.checkpoint, params, &optimizer);
  if (plan.reset_optimizer) optimizer.reset();
  if (plan.reset_schedule) state.update = 0, state.best_valid_loss = INFINITY, state.validations_since_best = 0;
  if (plan.reset_data) state.epoch = 0, state.position = 0, state.interval = {};
  spdlog::info("resumed from {}: update {}, {} tokens, data at epoch {} batch {}", plan.checkpoint, state.update,
               state.tokens, state.epoch, state.position);
  return state;
}

}  // namespace linformer

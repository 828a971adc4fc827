#include "linformer/train/resume_plan.h"

#include "linformer/core/check.h"
#include "linformer/nn/weights_file.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>

namespace linformer {

namespace fs = std::filesystem;

namespace {
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
}  // namespace

ResumePlan plan_resume(const TrainOptions& options, const std::string& run_dir) {
  const std::string checkpoints_dir = (fs::path(run_dir) / "checkpoints").string();
  ResumePlan plan;
  plan.reset_optimizer = options.reset_optimizer;
  plan.reset_schedule = options.reset_schedule;
  plan.reset_data = options.reset_data;
  const bool has_checkpoints = !list_checkpoints(checkpoints_dir).empty();
  if (options.resume == "auto") {
    if (has_checkpoints) plan.checkpoint = list_checkpoints(checkpoints_dir).back().path;
  } else if (!options.resume.empty()) {
    if (!fs::exists(fs::path(options.resume) / "DONE"))
      LF_FAIL("--resume {}: not a complete checkpoint directory (no DONE marker)", options.resume);
    plan.checkpoint = options.resume;
  }
  if (options.reset_schedule && has_checkpoints)
    LF_FAIL("--reset-schedule starts the update count again: write into a new --run-dir (resume from "
            "--resume {}/checkpoints/checkpoint_…) so that its checkpoints are not mixed with the old ones",
            run_dir);
  if (options.resume.empty() && has_checkpoints)
    LF_FAIL("run directory '{}' already has checkpoints: continue it with --resume auto, or choose another --run-dir",
            run_dir);
  return plan;
}

TrainingState load_resume_point(const ResumePlan& plan, const ModelSpec& spec, Parameters& params,
                                AdamW& optimizer) {
  TrainingState state;
  if (!plan.resumes()) return state;
  const ModelSpec stored = read_weights_spec((fs::path(plan.checkpoint) / "model.safetensors").string());
  const auto differences = differing_model_keys(stored, spec);
  if (!differences.empty()) {
    std::string message = fmt::format("cannot resume from {}: the recipe's model differs from the checkpoint's:",
                                      plan.checkpoint);
    for (const auto& d : differences) message += "\n  " + d;
    throw Error(message);
  }
  state = read_checkpoint(plan.checkpoint, params, &optimizer);
  if (plan.reset_optimizer) optimizer.reset();
  if (plan.reset_schedule) state.update = 0, state.best_valid_loss = INFINITY, state.validations_since_best = 0;
  if (plan.reset_data) state.epoch = 0, state.position = 0;
  spdlog::info("resumed from {}: update {}, {} tokens, data at epoch {} batch {}", plan.checkpoint, state.update,
               state.tokens, state.epoch, state.position);
  return state;
}

}  // namespace linformer

#include "linformer/train/checkpoint.h"

#include "linformer/config/section_json.h"
#include "linformer/core/check.h"
#include "linformer/core/checksum.h"
#include "linformer/core/fs.h"
#include "linformer/core/staged_dir.h"
#include "linformer/nn/safetensors.h"
#include "linformer/nn/weights_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <zlib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <type_traits>

namespace linformer {

namespace fs = std::filesystem;

void to_json(nlohmann::json& j, const TrainingState& s) {
  j = {{"update", s.update},
       {"micro_step", s.micro_step},
       {"tokens", s.tokens},
       {"epoch", s.epoch},
       {"position", s.position},
       {"elapsed_seconds", s.elapsed_seconds},
       // JSON has no infinity: no validation yet is written as null.
       {"best_valid_loss", std::isfinite(s.best_valid_loss) ? nlohmann::json(s.best_valid_loss) : nlohmann::json()},
       {"best_update", s.best_update},
       {"validations_since_best", s.validations_since_best},
       {"interval",
        {{"loss_sum", s.interval.loss_sum},
         {"masked", s.interval.masked},
         {"correct", s.interval.correct},
         {"tokens", s.interval.tokens},
         {"updates", s.interval.updates}}}};
  if (s.data.known()) {
    nlohmann::json order = nlohmann::json::object();
    for (const auto& [key, value] : s.data.order_keys) order[key] = value;
    j["data"] = {{"tokenizer_hash", s.data.tokenizer_hash},
                 {"train_checksum", s.data.train_checksum},
                 {"train_tokens", s.data.train_tokens},
                 {"order", order}};
  }
}

namespace {
// A field of the state as a T exactly: nlohmann's get<int64_t>() converts a float (undefined
// behaviour outside the integer's range, truncation inside it) and narrows wider integers.
template <class T>
T exact(const nlohmann::json& object, const char* key) {
  const nlohmann::json& value = object.at(key);
  if (!config::json_holds<T>(value) || (std::is_integral_v<T> && !value.is_number_integer()))
    LF_FAIL("{} = {} is not {}", key, value.dump(),
            std::is_floating_point_v<T> ? "a number"
            : std::is_unsigned_v<T>     ? "a non-negative integer"
                                        : "an integer");
  return value.get<T>();
}
}  // namespace

void from_json(const nlohmann::json& j, TrainingState& s) {
  s.update = exact<int64_t>(j, "update");
  s.micro_step = exact<int64_t>(j, "micro_step");
  s.tokens = exact<int64_t>(j, "tokens");
  s.epoch = exact<uint64_t>(j, "epoch");
  s.position = exact<uint64_t>(j, "position");
  s.elapsed_seconds = exact<double>(j, "elapsed_seconds");
  s.best_valid_loss =
      j.at("best_valid_loss").is_null() ? std::numeric_limits<double>::infinity() : exact<double>(j, "best_valid_loss");
  s.best_update = exact<int64_t>(j, "best_update");
  s.validations_since_best = exact<int>(j, "validations_since_best");
  if (j.contains("interval")) {  // older checkpoints: none in progress
    const auto& i = j.at("interval");
    s.interval = {exact<double>(i, "loss_sum"), exact<int64_t>(i, "masked"), exact<int64_t>(i, "correct"),
                  exact<int64_t>(i, "tokens"), exact<int64_t>(i, "updates")};
  }
  if (j.contains("data")) {
    const auto& d = j.at("data");
    s.data.tokenizer_hash = d.at("tokenizer_hash").get<std::string>();
    s.data.train_checksum = d.at("train_checksum").get<std::string>();
    s.data.train_tokens = exact<uint64_t>(d, "train_tokens");
    for (const auto& [key, value] : d.at("order").items())
      s.data.order_keys.emplace_back(key, value.get<std::string>());
  }
}

namespace {

// DONE, written last: kDoneLegacy, then kDoneStateCrc and state.json's crc32 (8 hex digits).
constexpr const char* kDoneLegacy = "complete\n";
constexpr const char* kDoneStateCrc = "state.json crc32 ";

// The files of a checkpoint that state.json checksums.
constexpr const char* kCheckpointFiles[] = {"model.safetensors", "optimizer.safetensors", "tokenizer.model",
                                            "recipe.toml"};

void save_moments(const std::string& path, const Parameters& params, const AdamW& optimizer) {
  std::vector<safetensors::TensorToWrite> tensors;
  const auto& layout = params.values().layout();
  for (const char* which : {"m", "v"}) {
    const Arena<float>& arena = which[0] == 'm' ? optimizer.first_moment() : optimizer.second_moment();
    for (const auto& p : params.table()) {
      std::vector<int64_t> shape;
      for (int d = 0; d < p.shape.rank(); ++d) shape.push_back(p.shape[d]);
      tensors.push_back({std::string(which) + "." + p.name, safetensors::DType::F32, shape,
                         arena.data() + layout.entry(layout.index_of(p.name)).offset});
    }
  }
  safetensors::write(path, tensors, {{"format", "linformer-adamw"}, {"steps", std::to_string(optimizer.steps())}});
}

void load_moments(const std::string& path, const Parameters& params, AdamW& optimizer) {
  const auto file = safetensors::File::read(path);
  const auto& layout = params.values().layout();
  for (const char* which : {"m", "v"}) {
    const Arena<float>& arena = which[0] == 'm' ? optimizer.first_moment() : optimizer.second_moment();
    for (const auto& p : params.table()) {
      const std::string name = std::string(which) + "." + p.name;
      const auto& info = file.info(name);
      if (info.dtype != safetensors::DType::F32 || info.numel() != p.shape.numel())
        LF_FAIL("{}: tensor '{}' does not match the model ({} values expected)", path, name, p.shape.numel());
      std::memcpy(arena.data() + layout.entry(layout.index_of(p.name)).offset, file.data(name),
                  static_cast<size_t>(p.shape.numel()) * sizeof(float));
    }
  }
  auto steps = file.metadata().find("steps");
  if (steps == file.metadata().end()) LF_FAIL("{}: __metadata__ has no 'steps'", path);
  optimizer.set_steps(std::stoll(steps->second));
}

}  // namespace

std::string write_checkpoint(const std::string& checkpoints_dir, const Parameters& params, const AdamW& optimizer,
                             const TrainingState& state, const std::string& resolved_recipe,
                             const std::string& tokenizer_model) {
  std::string final_path = (fs::path(checkpoints_dir) / fmt::format("checkpoint_{:08d}", state.update)).string();
  StagedDirectory staged(final_path);
  const std::string tmp = staged.path();
  const std::string model = (fs::path(tmp) / "model.safetensors").string();
  const std::string moments = (fs::path(tmp) / "optimizer.safetensors").string();
  save_weights(model, params);
  save_moments(moments, params, optimizer);
  write_file_atomic((fs::path(tmp) / "tokenizer.model").string(), tokenizer_model);
  write_file_atomic((fs::path(tmp) / "recipe.toml").string(), resolved_recipe);
  nlohmann::json files = nlohmann::json::object();
  for (const char* name : kCheckpointFiles) files[name] = crc32_hex(read_file((fs::path(tmp) / name).string()));
  nlohmann::json meta = {{"format", "linformer-checkpoint"},
                         {"format_version", kCheckpointFormatVersion},
                         {"state", state},
                         {"model", params.spec()},
                         {"files", files}};
  const std::string state_json = meta.dump(2) + "\n";
  write_file_atomic((fs::path(tmp) / "state.json").string(), state_json);
  write_file_atomic((fs::path(tmp) / "DONE").string(), kDoneLegacy + (kDoneStateCrc + crc32_hex(state_json)) + "\n");
  staged.install();  // replaces a stale checkpoint of the same update (a replayed run)
  return final_path;
}

namespace {
// state.json's text, checked against the crc32 that DONE records. A DONE of kDoneLegacy alone
// comes from a checkpoint written before state.json was checksummed: read as it is, with a
// warning when `warn`.
std::string read_sealed_state(const std::string& path, bool warn) {
  const std::string done = read_file((fs::path(path) / "DONE").string());
  std::string text = read_file((fs::path(path) / "state.json").string());
  if (done == kDoneLegacy) {
    if (warn)
      spdlog::warn(
          "{}/state.json has no checksum (a checkpoint written before state.json was checksummed): its "
          "counters are read unverified",
          path);
    return text;
  }
  const std::string sealed = std::string(kDoneLegacy) + kDoneStateCrc;
  const size_t digits = 8;
  if (done.size() != sealed.size() + digits + 1 || done.compare(0, sealed.size(), sealed) != 0 || done.back() != '\n')
    LF_FAIL("{}/DONE: not a checkpoint's completion marker (expected \"{}<8 hex digits>\")", path, sealed);
  const std::string stored = done.substr(sealed.size(), digits), actual = crc32_hex(text);
  if (actual != stored)
    LF_FAIL(
        "{}/state.json: checksum mismatch (crc32 {} recorded in DONE, {} found): the file was changed or is "
        "corrupt",
        path, stored, actual);
  return text;
}

nlohmann::json read_meta(const std::string& path, bool warn = false) {
  if (!fs::exists(fs::path(path) / "DONE")) LF_FAIL("checkpoint '{}' is incomplete (no DONE marker)", path);
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(read_sealed_state(path, warn));
  } catch (const nlohmann::json::exception& e) {
    LF_FAIL("{}/state.json: {}", path, e.what());
  }
  const auto field = [&](const char* key) {
    return meta.is_object() && meta.contains(key) ? meta.at(key) : nlohmann::json();
  };
  if (field("format") != "linformer-checkpoint") LF_FAIL("{}/state.json: not a linformer checkpoint's state", path);
  if (!field("format_version").is_number_integer() || field("format_version") != kCheckpointFormatVersion)
    LF_FAIL("{}: checkpoint format version {} is not supported (expected {})", path, field("format_version").dump(),
            kCheckpointFormatVersion);
  return meta;
}
}  // namespace

void verify_checkpoint(const std::string& path) {
  const nlohmann::json meta = read_meta(path, /*warn=*/true);
  const auto files = meta.find("files");
  for (const char* file : kCheckpointFiles) {
    if (files == meta.end() || !files->is_object() || !files->contains(file) || !files->at(file).is_string())
      LF_FAIL("{}/state.json: no checksum for {}", path, file);
    const std::string stored = files->at(file).get<std::string>();
    const std::string full = (fs::path(path) / file).string();
    if (!fs::exists(full)) LF_FAIL("{}: missing: the checkpoint is incomplete", full);
    const std::string actual = crc32_hex(read_file(full));
    if (actual != stored)
      LF_FAIL("{}: checksum mismatch (crc32 {} stored, {} found): the file is corrupt", full, stored, actual);
  }
}

TrainingState peek_checkpoint_state(const std::string& path) {
  const nlohmann::json meta = read_meta(path);
  try {
    return meta.at("state").get<TrainingState>();
  } catch (const nlohmann::json::exception& e) {
    LF_FAIL("{}/state.json: state: {}", path, e.what());
  } catch (const Error& e) {
    LF_FAIL("{}/state.json: state.{}", path, e.what());
  }
}

TrainingState read_checkpoint(const std::string& path, Parameters& params, AdamW* optimizer) {
  verify_checkpoint(path);
  TrainingState state = peek_checkpoint_state(path);
  load_weights((fs::path(path) / "model.safetensors").string(), params);
  if (optimizer) load_moments((fs::path(path) / "optimizer.safetensors").string(), params, *optimizer);
  return state;
}

std::vector<CheckpointInfo> list_checkpoints(const std::string& checkpoints_dir) {
  std::vector<CheckpointInfo> out;
  std::error_code ec;
  if (!fs::is_directory(checkpoints_dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(checkpoints_dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("checkpoint_", 0) != 0 || name.find(".tmp") != std::string::npos) continue;
    if (!fs::exists(entry.path() / "DONE")) continue;
    try {
      out.push_back({entry.path().string(), std::stoll(name.substr(11))});
    } catch (const std::exception&) {
      continue;  // not one of ours
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.update < b.update; });
  return out;
}

namespace {
// The checkpoint_<update> directories without DONE: writes rename whole checkpoints into place,
// so only an interrupted deletion leaves one. Call under the run directory's lock.
std::vector<std::string> remove_unmarked_checkpoints(const std::string& checkpoints_dir) {
  std::vector<std::string> removed;
  std::error_code ec;
  if (!fs::is_directory(checkpoints_dir, ec)) return removed;
  for (const auto& entry : fs::directory_iterator(checkpoints_dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool numbered = name.size() >= 19 && name.rfind("checkpoint_", 0) == 0 &&
                          std::all_of(name.begin() + 11, name.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!numbered || !entry.is_directory(ec) || fs::exists(entry.path() / "DONE", ec)) continue;
    fs::remove_all(entry.path(), ec);
    if (ec) LF_FAIL("cannot remove the incomplete checkpoint '{}': {}", entry.path().string(), ec.message());
    removed.push_back(entry.path().string());
  }
  return removed;
}
}  // namespace

RunCheckpoints::RunCheckpoints(std::string checkpoints_dir, const config::CheckpointConfig& keep,
                               std::string resolved_recipe, std::string tokenizer_model, DataIdentity data)
    : dir_(std::move(checkpoints_dir)),
      keep_(keep),
      recipe_(std::move(resolved_recipe)),
      tokenizer_(std::move(tokenizer_model)),
      data_(std::move(data)) {
  for (const auto& name : remove_stale_temporaries(dir_))
    spdlog::info("removed {}/{}: a checkpoint that an earlier process did not finish", dir_, name);
  for (const auto& path : remove_unmarked_checkpoints(dir_))
    spdlog::info("removed {}: a checkpoint without DONE, left by a process killed while deleting it", path);
}

void RunCheckpoints::write(const Parameters& params, const AdamW& optimizer, TrainingState state,
                           const data::BatcherState& data, double elapsed_seconds) {
  state.epoch = data.epoch;
  state.position = data.position;
  state.elapsed_seconds = elapsed_seconds;
  state.data = data_;
  last_path_ = write_checkpoint(dir_, params, optimizer, state, recipe_, tokenizer_);
  last_update_ = state.update;
  prune_checkpoints(dir_, keep_, state.best_update);
  spdlog::info("checkpoint {}", last_path_);
}

void prune_checkpoints(const std::string& checkpoints_dir, const config::CheckpointConfig& keep, int64_t best_update) {
  const auto all = list_checkpoints(checkpoints_dir);
  const size_t recent_from = all.size() > static_cast<size_t>(keep.keep_last) ? all.size() - keep.keep_last : 0;
  for (size_t i = 0; i < recent_from; ++i) {
    const int64_t u = all[i].update;
    if (keep.keep_best && u == best_update) continue;
    if (keep.milestone_every > 0 && u % keep.milestone_every == 0) continue;
    // DONE first: a kill during the deletion leaves an unmarked directory (removed at the next
    // start), never a marked one missing files.
    std::error_code ec;
    fs::remove(fs::path(all[i].path) / "DONE", ec);
    fs::remove_all(all[i].path, ec);
  }
}

std::string resolve_checkpoint(const std::string& path) {
  if (fs::exists(fs::path(path) / "DONE")) return path;
  const auto in_run = list_checkpoints((fs::path(path) / "checkpoints").string());
  if (!in_run.empty()) {
    spdlog::info("using the newest checkpoint of run {}: {}", path, in_run.back().path);
    return in_run.back().path;
  }
  LF_FAIL(
      "'{}' is neither a complete checkpoint directory (with a DONE marker, e.g. "
      "runs/<name>/checkpoints/checkpoint_00000600) nor a run directory with one",
      path);
}

}  // namespace linformer

#pragma once
// Checkpoints: everything needed to continue a run exactly.
//
// A checkpoint is a directory checkpoints/checkpoint_<update, 8 digits>/ holding
//   model.safetensors      the parameters (the weights-file format)
//   optimizer.safetensors  AdamW's moments m.<name>, v.<name>
//   tokenizer.model        the SentencePiece model, so eval and fill-mask need nothing else
//   recipe.toml            the resolved recipe of the run
//   state.json             TrainingState, the format version, crc32 of the files above
//   DONE                   written last
// It is written as checkpoint_…tmp.<pid>/, every file fsynced, then renamed into place,
// so a crash leaves either a complete checkpoint or a temporary directory that is ignored.

#include "linformer/config/recipe.h"
#include "linformer/data/batcher.h"
#include "linformer/nn/parameters.h"
#include "linformer/optim/adamw.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace linformer {

inline constexpr int kCheckpointFormatVersion = 1;

// Counters and positions of a run. Every random stream is a pure function of the recipe's
// seed and these counters (dropout: micro_step; masking and shuffling: the batcher's epoch and
// position), so this is also the complete RNG state.
struct TrainingState {
  int64_t update = 0;       // optimizer updates done
  int64_t micro_step = 0;   // micro-batches done (keys the dropout masks)
  int64_t tokens = 0;       // real training tokens consumed
  uint64_t epoch = 0;       // batcher: the next batch is (epoch, position)
  uint64_t position = 0;
  double elapsed_seconds = 0;  // training wall time, summed over resumes
  double best_valid_loss = std::numeric_limits<double>::infinity();
  int64_t best_update = 0;
  int validations_since_best = 0;
};

void to_json(nlohmann::json& j, const TrainingState& s);
void from_json(const nlohmann::json& j, TrainingState& s);

struct CheckpointInfo {
  std::string path;
  int64_t update = 0;
};

// Writes checkpoint_<update> under `checkpoints_dir`; returns its path.
std::string write_checkpoint(const std::string& checkpoints_dir, const Parameters& params, const AdamW& optimizer,
                             const TrainingState& state, const std::string& resolved_recipe,
                             const std::string& tokenizer_model);

// Reads a complete checkpoint into params and optimizer; verifies the marker, the format
// version and both checksums. Returns its state.
TrainingState read_checkpoint(const std::string& path, Parameters& params, AdamW* optimizer);

// The complete checkpoints in `checkpoints_dir`, oldest first.
std::vector<CheckpointInfo> list_checkpoints(const std::string& checkpoints_dir);

// Deletes the complete checkpoints that checkpoint.keep_last, keep_best (`best_update`) and
// milestone_every do not keep.
void prune_checkpoints(const std::string& checkpoints_dir, const config::CheckpointConfig& keep, int64_t best_update);

// The checkpoints of one run: each write records the data position and the elapsed time in
// the state, then prunes what checkpoint.keep_* no longer keeps.
class RunCheckpoints {
 public:
  RunCheckpoints(std::string checkpoints_dir, const config::CheckpointConfig& keep, std::string resolved_recipe,
                 std::string tokenizer_model);
  void write(const Parameters& params, const AdamW& optimizer, TrainingState state, const data::BatcherState& data,
             double elapsed_seconds);
  const std::string& last_path() const { return last_path_; }
  int64_t last_update() const { return last_update_; }  // −1 before the first of this session

 private:
  std::string dir_;
  const config::CheckpointConfig& keep_;
  std::string recipe_, tokenizer_;
  std::string last_path_;
  int64_t last_update_ = -1;
};

// Checks the marker, format version and checksums of a checkpoint directory.
void verify_checkpoint(const std::string& path);

}  // namespace linformer

#pragma once
// Checkpoints: everything needed to continue a run exactly.
//
// A checkpoint is a directory checkpoints/checkpoint_<update, 8 digits>/ holding
//   model.safetensors      the parameters (the weights-file format)
//   optimizer.safetensors  AdamW's moments m.<name>, v.<name>
//   tokenizer.model        the SentencePiece model, so eval and fill-mask need nothing else
//   recipe.toml            the resolved recipe of the run
//   state.json             TrainingState, the format version, crc32 of the files above
//   DONE                   written last: "complete", then state.json's crc32 (a DONE without
//                          it, from older versions, is accepted with a warning)
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
#include <utility>
#include <vector>

namespace linformer {

inline constexpr int kCheckpointFormatVersion = 1;

// The logging interval in progress at a checkpoint: its sums so far, so that a resumed run's
// first train row averages over the same updates as an uninterrupted run's.
struct IntervalSums {
  double loss_sum = 0;  // nats over the interval's masked tokens
  int64_t masked = 0, correct = 0, tokens = 0, updates = 0;
};

// What the run's data order rests on besides the counters: the vocabulary, the training shard's
// content and the recipe keys that order, cut and batch it. Resuming on other data is refused
// (--reset-data starts the new data from its beginning instead). Empty in older checkpoints.
struct DataIdentity {
  std::string tokenizer_hash;  // Tokenizer::hash(), hex
  std::string train_checksum;  // crc32 of the training shard, hex
  uint64_t train_tokens = 0;
  std::vector<std::pair<std::string, std::string>> order_keys;  // {recipe key, value}
  bool known() const { return !tokenizer_hash.empty(); }
};

// Counters and positions of a run. Every random stream is a pure function of the recipe's
// seed and these counters (dropout: micro_step; masking and shuffling: the batcher's epoch and
// position), so this is also the complete RNG state.
struct TrainingState {
  int64_t update = 0;      // optimizer updates done
  int64_t micro_step = 0;  // micro-batches done (keys the dropout masks)
  int64_t tokens = 0;      // real training tokens consumed
  uint64_t epoch = 0;      // batcher: the next batch is (epoch, position)
  uint64_t position = 0;
  double elapsed_seconds = 0;  // training wall time, summed over resumes
  double best_valid_loss = std::numeric_limits<double>::infinity();
  int64_t best_update = 0;
  int validations_since_best = 0;
  IntervalSums interval;  // the logging interval in progress
  DataIdentity data;      // the data these counters point into
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

// The state a checkpoint records (its state.json), without reading its tensors.
TrainingState peek_checkpoint_state(const std::string& path);

// The complete checkpoints in `checkpoints_dir`, oldest first.
std::vector<CheckpointInfo> list_checkpoints(const std::string& checkpoints_dir);

// Deletes the complete checkpoints that checkpoint.keep_last, keep_best (`best_update`) and
// milestone_every do not keep.
void prune_checkpoints(const std::string& checkpoints_dir, const config::CheckpointConfig& keep, int64_t best_update);

// The checkpoints of one run: each write records the data position, the data identity and the
// elapsed time in the state, then prunes what checkpoint.keep_* no longer keeps. Constructed
// under the run directory's lock, it first removes the temporary directories of checkpoints
// that a killed process or a failed write left behind.
class RunCheckpoints {
 public:
  RunCheckpoints(std::string checkpoints_dir, const config::CheckpointConfig& keep, std::string resolved_recipe,
                 std::string tokenizer_model, DataIdentity data);
  void write(const Parameters& params, const AdamW& optimizer, TrainingState state, const data::BatcherState& data,
             double elapsed_seconds);
  const std::string& last_path() const { return last_path_; }
  int64_t last_update() const { return last_update_; }  // −1 before the first of this session

 private:
  std::string dir_;
  const config::CheckpointConfig& keep_;
  std::string recipe_, tokenizer_;
  DataIdentity data_;
  std::string last_path_;
  int64_t last_update_ = -1;
};

// A checkpoint directory, or a run directory standing for its newest complete checkpoint (said
// in the log); anything else is an error naming the path.
std::string resolve_checkpoint(const std::string& path);

// Checks the marker, format version and checksums of a checkpoint directory.
void verify_checkpoint(const std::string& path);

}  // namespace linformer

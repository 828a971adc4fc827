#pragma once
// The data of a training run: the prepared directory, its unigram baseline, and the training
// (shuffled, dynamic masks) and validation (in order, fixed masks) batchers.
//
// Sequence-length warm-up (train.short_seq_len = s, train.short_seq_updates = U): updates 1 … U
// read blocks of s tokens cut from the training split like the n-token ones, each update
// train.accumulation · n/s micro-batches of train.batch_size rows (about the tokens of a later
// update); update U + 1 starts the n-token blocks at batch 0 of epoch 0. A checkpoint's batcher
// state is that of the batcher making the next update, so a resume on either side of U is exact.

#include "linformer/config/recipe.h"
#include "linformer/data/batcher.h"
#include "linformer/data/prepared.h"
#include "linformer/data/unigram.h"
#include "linformer/train/checkpoint.h"

#include <memory>
#include <string>

namespace linformer {

struct TrainingData {
  explicit TrainingData(data::PreparedData p) : prepared(std::move(p)), unigram(prepared.train) {}
  data::PreparedData prepared;
  data::UnigramModel unigram;  // the baseline each validation is read against
  std::unique_ptr<data::TokenBlocks> train_blocks, valid_blocks;
  std::unique_ptr<data::Masker> train_masker, valid_masker;
  std::unique_ptr<data::Batcher> train, valid;
  // Sequence-length warm-up only (short_updates > 0).
  std::unique_ptr<data::TokenBlocks> short_blocks;
  std::unique_ptr<data::Batcher> short_train;
  int64_t short_updates = 0;    // U: updates 1 … U read short_train
  int short_micro_batches = 0;  // micro-batches of such an update
  int micro_batches = 1;        // micro-batches of a later update (train.accumulation)

  // The batcher that makes update `update` (counted from 1), and how many micro-batches it has.
  data::Batcher& train_batcher(int64_t update) const { return update <= short_updates ? *short_train : *train; }
  int micro_batches_of(int64_t update) const { return update <= short_updates ? short_micro_batches : micro_batches; }
};

// Opens data.prepared_dir for the recipe; the errors say what to run (`linformer prepare`).
// Refuses an empty training or validation split.
std::unique_ptr<TrainingData> open_training_data(const config::Recipe& recipe, const std::string& recipe_path);

// The identity of this data as a checkpoint records it (see DataIdentity).
DataIdentity data_identity(const TrainingData& data, const config::Recipe& recipe);

}  // namespace linformer

#pragma once
// The data of a training run: the prepared directory, its unigram baseline, and the training
// (shuffled, dynamic masks) and validation (in order, fixed masks) batchers.

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
};

// Opens data.prepared_dir for the recipe; the errors say what to run (`linformer prepare`).
// Refuses an empty training or validation split.
std::unique_ptr<TrainingData> open_training_data(const config::Recipe& recipe, const std::string& recipe_path);

// The identity of this data as a checkpoint records it (see DataIdentity).
DataIdentity data_identity(const TrainingData& data, const config::Recipe& recipe);

}  // namespace linformer

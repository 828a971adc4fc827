#pragma once
// `linformer train`: the pretraining loop, from a recipe to checkpoints, metrics and logs.
//
// One update = train.accumulation micro-batches; the loss of each is scaled by 1 / (masked
// tokens of the whole update), so accumulating k micro-batches of b rows is the same update
// as one batch of k·b rows. Every random draw is a function of the recipe's seed and the
// TrainingState counters, so a resumed run continues exactly where the checkpoint was.

#include "linformer/config/recipe.h"

#include <string>
#include <vector>

namespace linformer {

// Data parallel: when the gradient allreduce runs (trainer.cpp's overlap_allreduce()).
enum class OverlapAllreduce { automatic, on, off };

struct TrainOptions {
  std::string recipe_path;
  std::vector<std::string> overrides;
  std::string run_dir;              // empty: runs/<recipe name>
  std::string resume;               // empty: fresh run (refused if the run directory has checkpoints); "auto"; a path
  bool reset_optimizer = false;     // resume: fresh AdamW moments
  bool reset_schedule = false;      // resume: the learning-rate schedule and update count start again
  bool reset_data = false;          // resume: the data position starts again at epoch 0
  int peer_timeout_seconds = 1800;  // data parallel: World::set_peer_timeout()
  OverlapAllreduce overlap_allreduce = OverlapAllreduce::automatic;
};

struct TrainSummary {
  std::string run_dir;
  int64_t updates = 0;
  double valid_loss = 0, valid_perplexity = 0, valid_accuracy = 0;
  double valid_unigram_perplexity = 0;  // the unigram baseline on the same masked targets
  bool interrupted = false;
  std::string last_checkpoint;
};

TrainSummary run_training(const TrainOptions& options);

// The run directory a recipe trains into when --run-dir is not given.
std::string default_run_dir(const config::Recipe& recipe);

}  // namespace linformer

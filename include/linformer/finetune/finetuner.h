#pragma once
// `linformer finetune`: a pretrained encoder (or a random one) with a classification head,
// trained on labelled documents by the one training loop (train/training_loop.h) with
// ClassificationJob as its job: every [train], [validation] and [checkpoint] key means what it
// means in pretraining (train.max_epochs, validation.every_epochs, ...).
//
// One update = train.accumulation batches of train.batch_size documents, the loss their mean
// cross-entropy. The best validation is the one of lowest loss; the test file is scored once at
// the end with its weights (results.json, written last: a resumed run without it scores again).
// Checkpoints, exact resume (--resume auto, from the fine-tuning checkpoint alone),
// SIGINT/SIGTERM and the metrics files work as in pretraining; every random draw is a function of
// the seed and the counters.

#include <cstdint>
#include <string>
#include <vector>

namespace linformer {

struct FinetuneOptions {
  std::string recipe_path;
  std::vector<std::string> overrides;
  std::string checkpoint;  // overrides finetune.checkpoint when not empty
  std::string run_dir;     // empty: runs/<recipe name>
  std::string resume;      // empty: a fresh run; "auto"; a checkpoint of this run
};

struct FinetuneSummary {
  std::string run_dir;
  int64_t updates = 0;
  int64_t best_update = 0;
  double best_valid_accuracy = 0, best_valid_macro_f1 = 0;
  double test_accuracy = -1, test_macro_f1 = -1;  // < 0: no test file
  bool interrupted = false;
  std::string last_checkpoint;
};

FinetuneSummary run_finetuning(const FinetuneOptions& options);

}  // namespace linformer

#pragma once
// `linformer finetune`: a pretrained encoder (or a random one) with a classification head,
// trained on labelled documents for finetune.epochs epochs.
//
// One update = one batch of train.batch_size documents, the loss their mean cross-entropy;
// the learning-rate schedule spans epochs × batches per epoch updates. After every epoch: a
// validation (loss, accuracy, macro F1) and a checkpoint; the best epoch is the one of lowest
// validation loss (validation.patience stops after that many epochs without a lower one), and
// the test file is evaluated once at the end with its weights.
// Checkpoints, exact resume (--resume auto), SIGINT/SIGTERM and the metrics files work as in
// pretraining; every random draw is a function of the seed and the counters.

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

#pragma once
// metrics.csv and metrics.jsonl in the run directory: one row per logged training
// step and per validation. Resuming from the checkpoint of update U first drops the
// rows after U (written after that checkpoint by the interrupted run, and about to be
// produced again), then appends: earlier rows are never lost or duplicated.
// A metrics.csv written by an older version with other columns is rewritten in today's
// columns (matched by name; a column it lacks is left empty in its rows).
// A row is appended to both files or to neither: a failed write (a full disk) throws Error
// naming the file and leaves both files ending in whole rows.

#include "linformer/core/fs.h"

#include <cstdint>
#include <string>

namespace linformer {

struct MetricsRow {
  std::string kind;  // "train" or "valid"; fine-tuning also "test"
  int64_t update = 0;
  int64_t tokens = 0;
  uint64_t epoch = 0;
  double lr = 0;
  double loss = 0;                 // nats per masked token
  double perplexity = 0;           // exp(loss)
  double accuracy = 0;             // masked tokens predicted right
  double grad_norm = 0;            // train rows
  double unigram_perplexity = 0;   // valid rows: the unigram baseline on the same masked targets (0: not known)
  double macro_f1 = -1;            // fine-tuning's valid and test rows: F1 averaged over labels (< 0: none)
  double shuffled_perplexity = 0;  // valid rows with validation.shuffle_words: words shuffled (0: not measured)
  double tokens_per_second = 0;
  double elapsed_seconds = 0;
};

class MetricsLog {
 public:
  // Opens (creating) run_dir/metrics.{csv,jsonl}; keeps only rows with update ≤ keep_until, and
  // none of kind `drop_kind` (fine-tuning's "test" row, when the test is to be scored again).
  // writes = false (the data-parallel processes but rank 0): touches nothing, appends nothing.
  MetricsLog(const std::string& run_dir, int64_t keep_until, bool writes = true, const std::string& drop_kind = "");
  void append(const MetricsRow& row);
  std::string csv_path() const { return csv_path_; }
  std::string jsonl_path() const { return jsonl_path_; }

 private:
  std::string csv_path_, jsonl_path_;
  AppendFile csv_, jsonl_;
  bool writes_ = true;
};

}  // namespace linformer

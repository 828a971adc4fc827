#pragma once
// Where a start of `linformer train` continues from, decided before anything is written:
// what to load (a checkpoint, or nothing for a fresh run), what to reset, what to refuse.

#include "linformer/nn/model_spec.h"
#include "linformer/optim/adamw.h"
#include "linformer/train/checkpoint.h"

#include <string>
#include <vector>

namespace linformer {

// What the command line asks: --resume (empty: a fresh run; "auto"; a checkpoint) and the resets.
struct ResumeRequest {
  std::string resume;
  bool reset_optimizer = false;  // fresh AdamW moments
  bool reset_schedule = false;   // the learning-rate schedule and update count start again
  bool reset_data = false;       // the data position starts again at epoch 0
};

struct ResumePlan {
  std::string checkpoint;  // empty: a fresh run
  bool reset_optimizer = false, reset_schedule = false, reset_data = false;
  bool resumes() const { return !checkpoint.empty(); }
};

// --resume auto takes the newest checkpoint that verifies (passing over damaged ones, said in
// the log). Refuses --resume PATH that is not a complete checkpoint, a schedule reset into a run directory
// that has checkpoints (its restarted update numbers would mix with theirs), and a fresh start
// over existing checkpoints.
ResumePlan plan_resume(const ResumeRequest& request, const std::string& run_dir);

// Refuses to resume on data the checkpoint's counters do not point into: another tokenizer
// (always), another training split or other seed, seq_len, break_mode or batch_size (unless
// --reset-data). `now` describes the data this run opened, `source` where it comes from (the
// prepared directory, or fine-tuning's training file).
void check_resume_data(const ResumePlan& plan, const DataIdentity& now, const std::string& source);

// The model keys in which `stored` (a checkpoint's) and `now` differ, dropout rates aside (they may
// change), each as "model.k (64 in the checkpoint, 128 now)".
std::vector<std::string> differing_model_keys(const ModelSpec& stored, const ModelSpec& now);

// The state to continue from: a fresh one, or the plan's checkpoint loaded into params and the
// optimizer with the plan's resets applied. Refuses a checkpoint whose model differs from
// `spec` (dropout rates may change), naming the keys.
TrainingState load_resume_point(const ResumePlan& plan, const ModelSpec& spec, Parameters& params, AdamW& optimizer);

}  // namespace linformer

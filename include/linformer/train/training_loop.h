#pragma once
// The one training loop of every job (training_job.h: pretraining, fine-tuning): updates with
// logging, validation, checkpoints and stopping as the run schedule says, then the end of the
// run: a finished run gets a last validation and checkpoint unless its last update had them; an
// interrupted one (SIGINT/SIGTERM/SIGHUP) only a checkpoint, since validating there would add a
// row and a patience count that the uninterrupted run never has.

#include "linformer/config/recipe.h"
#include "linformer/optim/adamw.h"
#include "linformer/train/checkpoint.h"
#include "linformer/train/metrics_log.h"
#include "linformer/train/resume_plan.h"
#include "linformer/train/training_job.h"

#include <string>

namespace linformer {

// Where the loop writes: the run's checkpoints and metrics.
struct LoopOutputs {
  RunCheckpoints& checkpoints;
  MetricsLog& metrics;
};

struct LoopOutcome {
  TrainingState state;
  bool interrupted = false;       // stopped by a signal: resumable
  bool already_finished = false;  // a finished run resumed: nothing was trained or written
  std::string reason;             // why it stopped
  std::string last_checkpoint;    // the newest checkpoint (this session's, or the one resumed from)
  JobValidation validation;       // the session's last validation (a finished run resumed: scored now)
};

// Trains `job` from `state` (fresh, or loaded from plan.checkpoint). Data parallel: every process
// runs it; rank 0 alone writes. overlap_allreduce: see UpdateStep.
LoopOutcome run_training_loop(TrainingJob& job, AdamW& optimizer, TrainingState state, const ResumePlan& plan,
                              const config::Recipe& recipe, LoopOutputs out, bool overlap_allreduce = false);

// The signal that stopped the run, the same on every process (a signal may reach one process only).
std::string agreed_stop_signal();

}  // namespace linformer

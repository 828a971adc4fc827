#pragma once
// What every run (pretraining, fine-tuning) does with its run directory before training, and
// the small helpers of its log lines.

#include "linformer/config/recipe.h"

#include <string>

namespace linformer {

// Logs into the run directory's train.log, removes what killed processes left half-written
// there, writes the resolved recipe, and sets the matmul precision (said in the log).
void start_run_directory(const std::string& run_dir, const config::Recipe& recipe, const std::string& resolved);

// `word` quoted for a POSIX shell when it needs it.
std::string shell_quoted(const std::string& word);

// "12m05s", "1h02m".
std::string format_duration(double seconds);

}  // namespace linformer

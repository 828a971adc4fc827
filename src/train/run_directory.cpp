#include "linformer/train/run_directory.h"

#include "linformer/core/fs.h"
#include "linformer/core/logging.h"
#include "linformer/core/openmp_wait.h"
#include "linformer/core/thread_placement.h"
#include "linformer/kernels/context.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

namespace linformer {

namespace fs = std::filesystem;

std::string format_duration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds);
  return s >= 3600 ? fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60) : fmt::format("{}m{:02d}s", s / 60, s % 60);
}

void start_run_directory(const std::string& run_dir, const config::Recipe& recipe, const std::string& resolved) {
  log_to_file((fs::path(run_dir) / "train.log").string());
  for (const auto& name : remove_stale_temporaries(run_dir))
    spdlog::info("removed {}/{}: a file that an earlier process did not finish writing", run_dir, name);
  write_file_atomic((fs::path(run_dir) / "recipe.toml").string(), resolved);
  spdlog::info("run directory {} (resolved recipe in recipe.toml), {}", run_dir, openmp_thread_placement());
  spdlog::info("OpenMP waiting: {}", openmp_wait_policy_description());
  const bool want_bf16 = recipe.train.precision == config::Precision::bf16;
  const MatmulPrecision precision = select_matmul_precision(want_bf16);
  if (want_bf16 && !precision.bf16)
    spdlog::warn("{}", precision.note);
  else
    spdlog::info("precision: {}", precision.note);
}

std::string shell_quoted(const std::string& word) {
  if (!word.empty() &&
      word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
          std::string::npos)
    return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace linformer

#pragma once
// Helpers shared by the tests: temporary directories, files, running the binary.

#include "linformer/core/fs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sys/wait.h>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace linformer::testing {

// A fresh directory under the system temp dir, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "linformer_test_XXXXXX").string();
    char* made = mkdtemp(pattern.data());
    if (!made) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `contents` to path()/name (creating subdirectories) and returns the full path.
  std::string write(const std::string& name, const std::string& contents) const {
    const auto file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << contents;
    return file.string();
  }

 private:
  std::filesystem::path path_;
};

// What the default logger says while this lives (its level permitting).
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)) {
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line, capturing its output and exit code.
inline CommandResult run_command(const std::string& command) {
  CommandResult result{-1, {}};
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The linformer binary with arguments, run from the source directory.
inline CommandResult run_linformer(const std::string& arguments) {
  return run_command(std::string("cd '") + LINFORMER_SOURCE_DIR + "' && '" + LINFORMER_BINARY + "' " + arguments);
}

// Runs `command` `rounds` times, each killed with SIGKILL after first_delay + round × step
// seconds (a command that finished by then is not); returns how many were killed.
inline int kill_repeatedly(const std::string& command, int rounds, double first_delay, double step) {
  int kills = 0;
  for (int round = 0; round < rounds; ++round) {
    const std::string delay = std::to_string(first_delay + step * round);
    const auto r = run_command(command + " >/dev/null 2>&1 & pid=$!; sleep " + delay +
                               "; kill -KILL $pid 2>/dev/null && echo killed; wait $pid");
    kills += r.output.find("killed") != std::string::npos;
  }
  return kills;
}

// A run's metrics.csv without the wall-clock columns (tokens_per_second, elapsed_seconds): the
// rows two runs of the same updates share.
inline std::vector<std::string> metric_rows(const std::string& run_dir) {
  std::istringstream in(read_file(run_dir + "/metrics.csv"));
  std::vector<std::string> rows;
  for (std::string line; std::getline(in, line);) {
    size_t cut = line.size();
    for (int i = 0; i < 2; ++i) cut = line.rfind(',', cut - 1);
    rows.push_back(line.substr(0, cut));
  }
  return rows;
}

}  // namespace linformer::testing

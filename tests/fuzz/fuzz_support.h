#pragma once
// What the fuzz targets of tests/fuzz/ share.
//
// Each fuzz_<name>.cpp defines LLVMFuzzerTestOneInput and is linked twice over: with
// replay_main.cpp in every build (CTest replays tests/fuzz/<name>/ through it), and with
// libFuzzer's main in the clang build (-DLINFORMER_FUZZ=ON, scripts/fuzz.sh).
//
// The contract of a parser of outside input: any bytes either parse or throw linformer::Error.
// Anything else is a finding: a sanitizer report, a crash, another exception (it escapes the
// target and aborts), a hang or unbounded memory (libFuzzer's -timeout and -rss_limit_mb), or a
// broken invariant the target checks with FUZZ_ASSERT.

#include "linformer/core/check.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace linformer::fuzz {

// A directory of this process's own, created on first use and removed at exit: under $TMPDIR
// when it is set (scripts/fuzz.sh sets it, and removes what a crashed target leaves), else on
// /dev/shm when there is one (the targets write a file per input; tmpfs keeps that off the disk).
class ScratchDir {
 public:
  ScratchDir() {
    namespace fs = std::filesystem;
    const bool shm = std::getenv("TMPDIR") == nullptr && ::access("/dev/shm", W_OK) == 0;
    const fs::path parent = shm ? fs::path("/dev/shm") : fs::temp_directory_path();
    std::string pattern = (parent / "linformer_fuzz_XXXXXX").string();
    if (!::mkdtemp(pattern.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    path_ = pattern;
    spdlog::set_level(spdlog::level::off);  // parsers' warnings would drown libFuzzer's output
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline const ScratchDir& scratch() {
  static const ScratchDir dir;
  return dir;
}

// Replaces `path` with the bytes (no fsync: the files live as long as one input).
inline void write_bytes(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Known findings not fixed yet (tests/fuzz/README.md): a target skips the inputs that could only
// find one again, so that fuzzing in CI stays green until the fix. LINFORMER_FUZZ_KNOWN=1 (the
// disabled fuzz.<name>.known tests set it) turns the skipping off to replay the reproducers.
inline bool skip_known_findings() {
  static const bool skip = std::getenv("LINFORMER_FUZZ_KNOWN") == nullptr;
  return skip;
}

// Runs `body`; linformer::Error is a parser's expected answer to bad input. Returns whether
// the body completed (the input was accepted).
template <class Body>
bool accepts(Body&& body) {
  try {
    body();
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace linformer::fuzz

// An invariant of accepted input: aborts (a finding) with the message when it does not hold.
#define FUZZ_ASSERT(cond, ...)                                                                    \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      std::fprintf(stderr, "fuzz: %s:%d: invariant '%s' broken: %s\n", __FILE__, __LINE__, #cond, \
                   ::fmt::format(__VA_ARGS__).c_str());                                           \
      std::abort();                                                                               \
    }                                                                                             \
  } while (0)

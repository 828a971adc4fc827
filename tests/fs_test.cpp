#include "linformer/core/fs.h"

#include "linformer/core/check.h"
#include "linformer/core/logging.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace linformer {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;
namespace fs = std::filesystem;

TEST(Fs, WriteAtomicCreatesAndReplacesWithoutLeftovers) {
  TempDir dir;
  const std::string path = (dir.path() / "state.json").string();
  write_file_atomic(path, "first");
  EXPECT_EQ(read_file(path), "first");
  write_file_atomic(path, std::string("second\0binary", 13));
  EXPECT_EQ(read_file(path), std::string("second\0binary", 13));
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1) << "a temporary file was left behind";
}

TEST(Fs, ErrorsNameThePath) {
  TempDir dir;
  const std::string missing_dir = (dir.path() / "no" / "such" / "dir" / "f").string();
  try {
    write_file_atomic(missing_dir, "x");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no/such/dir/f"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_file(missing_dir), Error);
}

TEST(Fs, TemporaryNamesAreDistinct) { EXPECT_NE(temporary_path_for("a"), temporary_path_for("a")); }

TEST(Logging, FileSinkAppendsToTheRunLog) {
  TempDir dir;
  const std::string log = (dir.path() / "train.log").string();
  init_logging(spdlog::level::info);
  log_to_file(log);
  log_to_file(log);  // attaching twice must not duplicate lines
  spdlog::info("hello from the test {}", 42);
  spdlog::debug("below the level");
  spdlog::default_logger()->flush();
  const std::string text = read_file(log);
  EXPECT_NE(text.find("[info] hello from the test 42"), std::string::npos) << text;
  EXPECT_EQ(text.find("hello from the test 42"), text.rfind("hello from the test 42")) << "duplicated line";
  EXPECT_EQ(text.find("below the level"), std::string::npos);
  EXPECT_THROW(parse_log_level("loud"), Error);
  EXPECT_EQ(parse_log_level("off"), spdlog::level::off);
}

// --log-level warn or off left train.log empty (issue 48, item 10): the option is the console's;
// a run log keeps info lines whatever it says.
TEST(Logging, TheConsoleLevelDoesNotQuietTheRunLog) {
  TempDir dir;
  for (const auto console : {spdlog::level::warn, spdlog::level::off}) {
    const std::string log = (dir.path() / fmt::format("train_{}.log", static_cast<int>(console))).string();
    init_logging(console);
    log_to_file(log);
    ::testing::internal::CaptureStderr();
    spdlog::info("an info line for the file");
    spdlog::debug("a debug line for neither");
    spdlog::default_logger()->flush();
    const std::string console_text = ::testing::internal::GetCapturedStderr();
    const std::string text = read_file(log);
    EXPECT_THAT(text, HasSubstr("[info] an info line for the file")) << console;
    EXPECT_THAT(text, Not(HasSubstr("a debug line"))) << console;
    EXPECT_THAT(console_text, Not(HasSubstr("an info line"))) << console;
  }
  init_logging(spdlog::level::info);
}

}  // namespace
}  // namespace linformer

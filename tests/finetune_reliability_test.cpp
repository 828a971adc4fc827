// Fine-tuning keeps the promises pretraining keeps (RELIABILITY.md): killed at any moment,
// hung up with the console gone, or out of disk, a run continued with --resume auto ends with
// the rows, weights and results.json of a run never disturbed.

#include "finetune_fixture.h"

#include <gmock/gmock.h>

#include <csignal>
#include <filesystem>

namespace linformer {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;
using testing::TempDir;

using FinetuneReliability = testing::FinetuneFixture;

// Kills spread over the run (start-up, updates, validations, checkpoint writes and the test
// scoring after the last one), each continued with --resume auto.
TEST_F(FinetuneReliability, SigkillAtAnyMomentThenResumeEqualsAnUninterruptedRun) {
  TempDir runs;
  const std::string straight = (runs.path() / "straight").string();
  finetune(straight, "none");
  const std::string run = (runs.path() / "run").string();
  const std::string command = finetune_command(run) + " --resume auto";
  EXPECT_GE(testing::kill_repeatedly(command, 10, 0.05, 0.03), 5) << "the run finished before most kills: lengthen it";
  EXPECT_EQ(finetune(run, "none", {}, "auto").updates, 6 * 16);
  expect_same_run(run, straight);
}

// SIGHUP (a closed terminal) with the console's reader gone: a checkpoint and the hint, exit 0,
// no SIGPIPE from console writes, and the resumed run ends as the undisturbed one.
TEST_F(FinetuneReliability, SighupIsHandledLikeSigtermEvenWithTheConsoleGone) {
  std::signal(SIGHUP, SIG_DFL);  // an ignored SIGHUP (nohup) would pass to the child, which keeps ignoring it
  TempDir runs;
  const std::string straight = (runs.path() / "straight").string();
  finetune(straight, "none", {"logging.every=1"});
  const std::string run = (runs.path() / "run").string();
  const std::string console = (runs.path() / "console").string();
  const auto r = testing::run_command("mkfifo " + console + " && { cat " + console + " >/dev/null & reader=$!; " +
                                      finetune_command(run, {"logging.every=1"}) + " >" + console +
                                      " 2>&1 & pid=$!; for i in $(seq 1200); do grep -q " + "'update 20/' " + run +
                                      "/train.log 2>/dev/null && break; sleep 0.01; done; kill -HUP $pid; sleep 0.2; " +
                                      "kill $reader; wait $pid; echo exit=$?; }");
  EXPECT_THAT(r.output, HasSubstr("exit=0"));
  const std::string log = read_file(run + "/train.log");
  ASSERT_THAT(log, HasSubstr("SIGHUP")) << "the run ended before the signal";
  EXPECT_THAT(log, HasSubstr("--resume auto"));
  EXPECT_FALSE(fs::exists(run + "/results.json"));
  finetune(run, "none", {"logging.every=1"}, "auto");
  expect_same_run(run, straight);
}

// Every write fails once a budget of bytes is spent (a metrics row, inside a checkpoint, the
// recipe copy, results.json): the run stops naming the file and the cause, leaves only whole
// files, and --resume auto ends as the undisturbed run.
TEST_F(FinetuneReliability, AFullDiskStopsTheRunCleanlyAndResumeContinuesExactly) {
  TempDir runs;
  const std::string straight = (runs.path() / "straight").string();
  finetune(straight, "none");
  int failures = 0;
  for (int64_t budget : {100, 3'000, 30'000, 300'000, 1'000'000, 3'000'000, 6'000'000, 12'000'000}) {
    SCOPED_TRACE("write budget " + std::to_string(budget));
    const std::string run = (runs.path() / ("full_" + std::to_string(budget))).string();
    fail_writes_after_bytes_for_testing(budget);
    try {
      finetune(run, "none", {}, "auto");
    } catch (const Error& e) {
      ++failures;
      EXPECT_THAT(e.what(), HasSubstr("No space left on device"));
      EXPECT_THAT(e.what(), HasSubstr(run));
    }
    fail_writes_after_bytes_for_testing(-1);
    for (const auto& c : list_checkpoints(run + "/checkpoints")) EXPECT_NO_THROW(verify_checkpoint(c.path));
    EXPECT_EQ(finetune(run, "none", {}, "auto").updates, 6 * 16);
    expect_same_run(run, straight);
    for (const auto& entry : fs::recursive_directory_iterator(run))
      EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(".tmp."))) << "a temporary was left behind";
  }
  EXPECT_GE(failures, 6) << "the budgets no longer reach into the run: raise them";
}

}  // namespace
}  // namespace linformer

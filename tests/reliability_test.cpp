// The reliability promises of RELIABILITY.md, end to end: one process per run directory, a full
// disk survived, exact resume after SIGTERM (rows, patience, the interrupted interval), a
// damaged newest checkpoint passed over, stale temporaries removed, resume refused on other data.

#include "linformer/core/fs.h"
#include "linformer/train/checkpoint.h"
#include "linformer/train/trainer.h"
#include "test_util.h"
#include "train_fixture.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <regex>
#include <sstream>

// The sanitized build (build-sanitize/): its binaries cannot run under an address-space limit.
#if defined(__SANITIZE_ADDRESS__)
#define LINFORMER_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LINFORMER_TEST_ASAN 1
#endif
#endif
#ifdef LINFORMER_TEST_ASAN
constexpr bool kUnderAddressSanitizer = true;
#else
constexpr bool kUnderAddressSanitizer = false;
#endif

namespace linformer {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;
namespace fs = std::filesystem;

using Reliability = testing::TrainFixture;

const std::string kBinary = "'" LINFORMER_BINARY "'";

// Every line of a CSV file has the header's number of fields.
void expect_whole_rows(const std::string& csv_path) {
  std::istringstream in(read_file(csv_path));
  std::string header;
  ASSERT_TRUE(std::getline(in, header)) << csv_path << " is empty";
  const auto fields = [](const std::string& line) { return std::count(line.begin(), line.end(), ',') + 1; };
  for (std::string line; std::getline(in, line);) EXPECT_EQ(fields(line), fields(header)) << csv_path << ": " << line;
}

TEST_F(Reliability, ASecondProcessOnARunDirectoryIsRefusedWithTheHoldersPid) {
  TempDir runs;
  const std::string run = (runs.path() / "run").string();
  const std::string command = kBinary + " train --recipe " + recipe_ + " --run-dir " + run;
  const auto r = testing::run_command(
      command +
      " --set train.max_updates=100000000 --set validation.every=0 --set checkpoint.every=0 >/dev/null 2>&1 & "
      "pid=$!; echo \"first=$pid\"; "
      "for i in $(seq 1200); do grep -q 'update 2/' " +
      run + "/train.log 2>/dev/null && break; sleep 0.05; done; " + command +
      " --resume auto 2>&1; echo \"second_exit=$?\"; " + command +
      " 2>&1; echo \"fresh_exit=$?\"; "
      "kill -TERM $pid; wait $pid; echo \"first_exit=$?\"");
  const std::smatch pid = [&] {
    std::smatch m;
    std::regex_search(r.output, m, std::regex("first=([0-9]+)"));
    return m;
  }();
  ASSERT_EQ(pid.size(), 2u) << r.output;
  EXPECT_THAT(r.output, HasSubstr("is in use by process " + pid[1].str() + " (lock file " + run + "/run.lock)"));
  EXPECT_THAT(r.output, HasSubstr("second_exit=1"));
  EXPECT_THAT(r.output, HasSubstr("fresh_exit=1"));
  EXPECT_THAT(r.output, HasSubstr("first_exit=0"));  // the first run was not disturbed
  expect_whole_rows(run + "/metrics.csv");
  // The lock goes with its process: the run continues.
  const auto saved = list_checkpoints(run + "/checkpoints");
  ASSERT_EQ(saved.size(), 1u);
  const int64_t until = saved[0].update + 2;
  EXPECT_EQ(train(run, {"train.max_updates=" + std::to_string(until)}, "auto").updates, until);
}

// Every write fails once a budget of bytes is spent (at a metrics row, inside a checkpoint, at
// the recipe copy, …): the run stops with the file and the cause named, what it leaves is whole,
// and --resume auto then ends exactly as an undisturbed run.
TEST_F(Reliability, AFullDiskStopsTheRunCleanlyAndResumeContinuesExactly) {
  TempDir runs;
  const std::vector<std::string> settings = {"train.max_updates=12", "validation.every=4", "checkpoint.every=4"};
  const std::string straight = (runs.path() / "straight").string();
  train(straight, settings);
  int failures = 0;
  for (int64_t budget : {100, 2'000, 10'000, 40'000, 150'000, 400'000, 1'000'000, 3'000'000}) {
    SCOPED_TRACE("write budget " + std::to_string(budget));
    const std::string run = (runs.path() / ("full_" + std::to_string(budget))).string();
    fail_writes_after_bytes_for_testing(budget);
    try {
      train(run, settings, "auto");
    } catch (const Error& e) {
      ++failures;
      EXPECT_THAT(e.what(), HasSubstr("No space left on device"));
      EXPECT_THAT(e.what(), HasSubstr(run));  // the file that failed is named
    }
    fail_writes_after_bytes_for_testing(-1);
    if (fs::exists(run + "/metrics.csv")) expect_whole_rows(run + "/metrics.csv");
    for (const auto& c : list_checkpoints(run + "/checkpoints")) EXPECT_NO_THROW(verify_checkpoint(c.path));
    const auto resumed = train(run, settings, "auto");
    EXPECT_EQ(resumed.updates, 12);
    EXPECT_EQ(metric_rows(run), metric_rows(straight));
    EXPECT_EQ(final_weights(run), final_weights(straight));
    for (const auto& entry : fs::recursive_directory_iterator(run))
      EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(".tmp."))) << "a temporary was left behind";
  }
  EXPECT_GE(failures, 5) << "the budgets no longer reach into the run: raise them";
}

// checkpoint.on_write_error = "skip": a checkpoint that cannot be written is logged and the run
// goes on (here the disk stays full, so the next metrics row stops it), earlier ones intact.
TEST_F(Reliability, ASkippedCheckpointKeepsTheRunGoingUntilTheNextWrite) {
  TempDir runs;
  const std::string run = (runs.path() / "run").string();
  train(run, {"train.max_updates=4", "checkpoint.every=4"});
  fail_writes_after_bytes_for_testing(3'000);  // enough for a few metrics rows, not a checkpoint
  try {
    train(run,
          {"train.max_updates=12", "checkpoint.every=2", "logging.every=3", "validation.every=0",
           "checkpoint.on_write_error=\"skip\""},
          "auto");
    ADD_FAILURE() << "the run ended despite a full disk";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("metrics"));
  }
  fail_writes_after_bytes_for_testing(-1);
  EXPECT_THAT(read_file(run + "/train.log"), HasSubstr("not written"));
  EXPECT_THAT(read_file(run + "/train.log"), HasSubstr("training goes on (checkpoint.on_write_error = \"skip\")"));
  EXPECT_EQ(list_checkpoints(run + "/checkpoints").back().update, 4);
  expect_whole_rows(run + "/metrics.csv");
}

// SIGTERM at an arbitrary update, then the hint's own command: the same rows (no extra
// validation, the interrupted logging interval's means whole), the same patience and the same
// weights as a run never interrupted.
TEST_F(Reliability, SigtermThenTheHintedCommandEqualsAnUninterruptedRun) {
  TempDir runs;
  // Patience 3 with validation every 40: the run stops early (the loss of this tiny corpus
  // rises again), so a validation counted twice would stop it at another update.
  const std::vector<std::string> settings = {"train.max_updates=1200", "validation.every=40", "validation.patience=3",
                                             "logging.every=10",       "checkpoint.every=0",  "optim.lr=0.01"};
  const std::string straight = (runs.path() / "straight").string();
  const auto uninterrupted = train(straight, settings);
  ASSERT_LT(uninterrupted.updates, 1200) << "patience no longer stops the run early: the test checks nothing";

  const std::string run = (runs.path() / "with space").string();
  std::string command = kBinary + " train --recipe " + recipe_ + " --run-dir '" + run + "'";
  for (const auto& s : settings) command += " --set '" + s + "'";
  const auto r = testing::run_command(command +
                                      " 2>&1 & pid=$!; "
                                      "for i in $(seq 1200); do grep -q 'update 30/' '" +
                                      run +
                                      "/train.log' 2>/dev/null && break; sleep 0.01; done; "
                                      "kill -TERM $pid; wait $pid");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_THAT(r.output, HasSubstr("interrupted by SIGTERM")) << "the run ended before the signal";
  std::smatch hint;
  ASSERT_TRUE(std::regex_search(r.output, hint, std::regex("continue with: linformer (train [^\n]*)"))) << r.output;
  EXPECT_THAT(hint[1].str(), HasSubstr("--set validation.patience=3 "));
  const auto resumed = testing::run_command(kBinary + " " + hint[1].str());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(metric_rows(run), metric_rows(straight));
  EXPECT_EQ(final_weights(run), final_weights(straight));
}

// Closing the terminal or SSH session sends SIGHUP and closes the console: the run must end as
// after SIGTERM (a checkpoint and the hint, exit 0), its console writes after the hang-up not
// killing it (SIGPIPE), and continue to the uninterrupted run's rows (issue 48, item 14).
TEST_F(Reliability, SighupIsHandledLikeSigtermEvenWithTheConsoleGone) {
  std::signal(SIGHUP, SIG_DFL);  // an ignored SIGHUP (nohup) would pass to the child, which keeps ignoring it
  TempDir runs;
  const std::vector<std::string> settings = {"train.max_updates=200", "validation.every=40", "logging.every=1",
                                             "checkpoint.every=0"};
  const std::string straight = (runs.path() / "straight").string();
  train(straight, settings);
  const std::string run = (runs.path() / "run").string();
  std::string command = kBinary + " train --recipe " + recipe_ + " --run-dir " + run;
  for (const auto& s : settings) command += " --set " + s;
  const std::string console = (runs.path() / "console").string();
  const auto r = testing::run_command(
      "mkfifo " + console + " && { cat " + console + " >/dev/null & reader=$!; " + command + " >" + console +
      " 2>&1 & pid=$!; for i in $(seq 1200); do grep -q 'update 20/' " + run +
      "/train.log 2>/dev/null && break; sleep 0.01; done; kill -HUP $pid; sleep 0.2; kill $reader; wait $pid; "
      "echo exit=$?; }");
  EXPECT_THAT(r.output, HasSubstr("exit=0"));
  const std::string log = read_file(run + "/train.log");
  ASSERT_THAT(log, HasSubstr("SIGHUP")) << "the run ended before the signal";
  EXPECT_THAT(log, HasSubstr("--resume auto"));
  const auto stopped = list_checkpoints(run + "/checkpoints");
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_LT(stopped[0].update, 200);
  train(run, settings, "auto");
  EXPECT_EQ(metric_rows(run), metric_rows(straight));
  EXPECT_EQ(final_weights(run), final_weights(straight));
}

// SIGKILL gives no warning: killed at eight moments (in updates, metrics rows, validations and
// checkpoint writes alike), each time continued with --resume auto, the run ends with the rows
// and weights of a run never killed.
TEST_F(Reliability, SigkillAtAnyMomentThenResumeEqualsAnUninterruptedRun) {
  TempDir runs;
  const std::vector<std::string> settings = {"train.max_updates=600", "checkpoint.every=25", "checkpoint.keep_last=2",
                                             "validation.every=100", "logging.every=10"};
  const std::string straight = (runs.path() / "straight").string();
  train(straight, settings);
  const std::string run = (runs.path() / "run").string();
  std::string command = kBinary + " train --recipe " + recipe_ + " --run-dir " + run + " --resume auto";
  for (const auto& s : settings) command += " --set " + s;
  EXPECT_GE(testing::kill_repeatedly(command, 8, 0.05, 0.04), 4) << "the run finished before most kills: lengthen it";
  EXPECT_EQ(train(run, settings, "auto").updates, 600);
  EXPECT_EQ(metric_rows(run), metric_rows(straight));
  EXPECT_EQ(final_weights(run), final_weights(straight));
}

TEST_F(Reliability, ResumeAutoPassesOverADamagedNewestCheckpointAndSaysWhy) {
  TempDir runs;
  const std::vector<std::string> settings = {"validation.every=4", "checkpoint.every=4"};
  const auto with_updates = [&](int updates) {
    auto s = settings;
    s.push_back("train.max_updates=" + std::to_string(updates));
    return s;
  };
  const std::string straight = (runs.path() / "straight").string();
  train(straight, with_updates(12));
  const std::string run = (runs.path() / "run").string();
  train(run, with_updates(8));
  const std::string newest = list_checkpoints(run + "/checkpoints").back().path;
  std::string bytes = read_file(newest + "/optimizer.safetensors");
  bytes[bytes.size() / 2] ^= 0x20;
  write_file_atomic(newest + "/optimizer.safetensors", bytes);
  // Stale temporaries of killed writers, in the run directory and among the checkpoints.
  const std::string stale_checkpoint = run + "/checkpoints/checkpoint_00000012.tmp.4242.0";
  fs::create_directories(stale_checkpoint);
  write_file_atomic(stale_checkpoint + "/model.safetensors", std::string(1000, 'x'));
  write_file_atomic(run + "/metrics.jsonl.tmp.4242.3", "{");

  const auto resumed = train(run, with_updates(12), "auto");
  EXPECT_EQ(resumed.updates, 12);
  const std::string log = read_file(run + "/train.log");
  EXPECT_THAT(log, HasSubstr("passing over damaged checkpoint " + newest));
  EXPECT_THAT(log, HasSubstr("checksum mismatch"));
  EXPECT_THAT(log, HasSubstr("checkpoint_00000004, the newest checkpoint that verifies"));
  EXPECT_FALSE(fs::exists(stale_checkpoint));
  EXPECT_FALSE(fs::exists(run + "/metrics.jsonl.tmp.4242.3"));
  EXPECT_EQ(metric_rows(run), metric_rows(straight));
  EXPECT_EQ(final_weights(run), final_weights(straight));
}

TEST_F(Reliability, ResumeIsRefusedOnAnotherTokenizerOrOtherTrainingData) {
  TempDir runs;
  const std::string run = (runs.path() / "run").string();
  train(run, {"train.max_updates=4"});
  // Another tokenizer of the same vocabulary size (so the model's shape is the same): a corpus of
  // one of the two files.
  const std::string other_tokenizer = (runs.path() / "other_tokenizer").string();
  const std::string one_file = (dir_->path() / "corpus" / "a.txt").string();
  ASSERT_EQ(testing::run_linformer("prepare --recipe " + recipe_ + " --set 'data.corpus=[\"" + one_file +
                                   "\"]' --set data.prepared_dir=" + other_tokenizer)
                .exit_code,
            0);
  try {
    train(run, {"train.max_updates=8", "data.prepared_dir=\"" + other_tokenizer + "\""}, "auto");
    ADD_FAILURE() << "resumed with another tokenizer";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("its tokenizer (tokenizer.model, hash"));
    EXPECT_THAT(e.what(), HasSubstr(other_tokenizer));
  }
  // The same tokenizer (given as a model file), other splits: the data position means nothing there.
  const std::string other_split = (runs.path() / "other_split").string();
  const std::string tokenizer = (dir_->path() / "prepared" / "spm.model").string();
  ASSERT_EQ(testing::run_linformer("prepare --recipe " + recipe_ + " --set data.tokenizer_model=" + tokenizer +
                                   " --set data.valid_fraction=0.2 --set data.prepared_dir=" + other_split)
                .exit_code,
            0);
  const std::vector<std::string> moved = {"train.max_updates=8", "data.prepared_dir=\"" + other_split + "\"",
                                          "data.valid_fraction=0.2"};
  try {
    train(run, moved, "auto");
    ADD_FAILURE() << "resumed into other training data";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the training split of '" + other_split + "'"));
    EXPECT_THAT(e.what(), HasSubstr("--reset-data"));
  }
  TrainOptions o;
  o.recipe_path = recipe_;
  o.overrides = moved;
  o.run_dir = run;
  o.resume = "auto";
  o.reset_data = true;  // what the refusal offers: read the new data from its start
  EXPECT_EQ(run_training(o).updates, 8);
}

TEST_F(Reliability, AnEmptyValidSplitIsRefusedNamingTheKey) {
  TempDir runs;
  const std::string prepared = (runs.path() / "prepared").string();
  const std::string tokenizer = (dir_->path() / "prepared" / "spm.model").string();
  const auto prepared_run = testing::run_linformer("prepare --recipe " + recipe_ +
                                                   " --set data.valid_fraction=0 "
                                                   "--set data.tokenizer_model=" +
                                                   tokenizer + " --set data.prepared_dir=" + prepared);
  ASSERT_EQ(prepared_run.exit_code, 0) << prepared_run.output;
  try {
    train((runs.path() / "run").string(),
          {"train.max_updates=2", "data.valid_fraction=0", "data.prepared_dir=\"" + prepared + "\""});
    ADD_FAILURE() << "trained without a validation split";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the valid split of '" + prepared + "' is empty (data.valid_fraction = 0)"));
  }
}

// A model that cannot fit is refused before anything is allocated, with the estimate, the keys
// that size it and the memory available (2 TB of parameters here: more than any test machine).
TEST_F(Reliability, AModelThatCannotFitIsRefusedBeforeAllocating) {
  TempDir runs;
  try {
    train((runs.path() / "run").string(), {"model.ffn_dim=1073741824"});
    ADD_FAILURE() << "a 2 TB model was not refused";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("training needs about 2080.0 GiB (parameters and gradients 1040.0 GiB"));
    EXPECT_THAT(e.what(), HasSubstr("model.ffn_dim = 1073741824"));
    EXPECT_THAT(e.what(), HasSubstr("available ("));
  }
  // And in eval: a batch of 10^8 sequences of the tiny model needs terabytes of activations.
  const std::string run = (runs.path() / "small").string();
  train(run, {"train.max_updates=2"});
  const auto r = testing::run_linformer("eval -c " + run + " --split valid --batch-size 100000000");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("evaluation needs about"));
  EXPECT_THAT(r.output, HasSubstr("the batch size (100000000, --batch-size or the recipe's)"));
}

// Under an address-space limit (ulimit -v, prlimit --as) a model that fits MemAvailable passed
// the estimate and failed on an internal arena check (issue 48, item 17): the estimate takes the
// smallest of every limit and names the one that binds. Here 2 layers of 2 × 32 × 10^6 weights,
// four copies of each in training: about 1.9 GiB, over a 1.4 GiB address space.
TEST_F(Reliability, TheMemoryEstimateHonoursTheAddressSpaceLimit) {
  if (kUnderAddressSanitizer)
    GTEST_SKIP() << "AddressSanitizer reserves terabytes of shadow address space: it cannot start under ulimit -v";
  TempDir runs;
  const auto r = testing::run_command("ulimit -v 1500000 && " + kBinary + " train --recipe " + recipe_ + " --run-dir " +
                                      (runs.path() / "run").string() + " --set model.ffn_dim=1000000");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("training needs about"));
  EXPECT_THAT(r.output,
              HasSubstr("available (the room under the address-space limit (RLIMIT_AS, ulimit -v: 1.4 GiB))"));
}

TEST_F(Reliability, EvalAndFillMaskRefuseMeaninglessRequests) {
  TempDir runs;
  const std::string run = (runs.path() / "run").string();
  train(run, {"train.max_updates=2"});
  const auto usage_error = [&](const std::string& arguments, const std::string& message) {
    const auto r = testing::run_linformer(arguments);
    EXPECT_EQ(r.exit_code, 2) << arguments << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(message)) << arguments;
  };
  usage_error("eval -c " + run + " --batch-size 0", "--batch-size: 0 is less than 1");
  usage_error("eval -c " + run + " --batch-size -3", "--batch-size: -3 is less than 1");
  usage_error("eval -c " + run + " --batch-size 2.5", "--batch-size: '2.5' is not a whole number");
  usage_error("eval -c " + run + " --max-batches -1", "--max-batches: -1 is less than 1");
  usage_error("fill-mask -c " + run + " --top-k 0 'the <mask> is'", "--top-k: 0 is less than 1");
  // One letter masks no token: a perplexity of 1.00 over nothing was once reported.
  const std::string text = runs.write("short.txt", "x\n");
  const auto r = testing::run_linformer("eval -c " + run + " --text " + text + " 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("no token was masked"));
  EXPECT_THAT(r.output, Not(HasSubstr("perplexity 1.00")));
}

}  // namespace
}  // namespace linformer

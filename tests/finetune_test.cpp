// Fine-tuning end to end (linformer finetune, classify) on the training tests' tiny corpus: a
// task the encoder must learn through attention (the label is in one word of the document; the
// head reads position 0), from a pretrained checkpoint and from a random encoder; exact resume
// after SIGTERM; bad input refused with the key or file named.

#include "finetune_fixture.h"
#include "linformer/nn/safetensors.h"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <regex>

namespace linformer {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;
using testing::TempDir;

const std::string kBinary = "'" LINFORMER_BINARY "'";

using Finetune = testing::FinetuneFixture;

TEST_F(Finetune, FromAPretrainedCheckpointLearnsTheTask) {
  TempDir runs;
  const std::string run = (runs.path() / "run").string();
  const FinetuneSummary s = finetune(run, pretrained_checkpoint());
  EXPECT_EQ(s.updates, 6 * 16);
  EXPECT_GE(s.best_valid_accuracy, 0.9) << "chance is 0.5";
  EXPECT_GE(s.test_accuracy, 0.9);
  const auto results = nlohmann::json::parse(read_file(run + "/results.json"));
  EXPECT_EQ(results["labels"], nlohmann::json({"no", "yes"}));
  EXPECT_DOUBLE_EQ(results["test"]["accuracy"].get<double>(), s.test_accuracy);
  EXPECT_THAT(read_file(run + "/train.log"), HasSubstr("encoder loaded from"));
  const auto rows = metric_rows(run);
  EXPECT_EQ(std::count_if(rows.begin(), rows.end(), [](const std::string& r) { return r.rfind("valid,", 0) == 0; }), 6);
  EXPECT_EQ(std::count_if(rows.begin(), rows.end(), [](const std::string& r) { return r.rfind("test,", 0) == 0; }), 1);

  // classify: the fine-tuned checkpoint labels documents it never saw.
  TempDir docs;
  const std::string yes = docs.write("yes.txt", "trutrutru kalo mine.\n");
  const auto r =
      testing::run_linformer("--log-level error classify --checkpoint " +
                             list_checkpoints(run + "/checkpoints").back().path + " " + yes + " " + files_["test"]);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream lines(r.output);
  std::string line;
  int documents = 0;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_NEAR(j["probabilities"]["yes"].get<double>() + j["probabilities"]["no"].get<double>(), 1.0, 1e-5);
    if (documents++ == 0) {
      EXPECT_EQ(j["source"], yes);
      EXPECT_EQ(j["label"], "yes");
    }
  }
  EXPECT_EQ(documents, 1 + 24);

  // classify refuses a binary file and a checkpoint that was not fine-tuned.
  const auto binary = testing::run_linformer("classify --checkpoint " + run + " /bin/ls");
  EXPECT_EQ(binary.exit_code, 1);
  EXPECT_THAT(binary.output, HasSubstr("'/bin/ls' is not text"));
  const auto pretraining = testing::run_linformer("classify --checkpoint " + pretrained_ + " " + yes);
  EXPECT_EQ(pretraining.exit_code, 1);
  EXPECT_THAT(pretraining.output, HasSubstr("not a fine-tuned checkpoint"));
}

TEST_F(Finetune, FrozenEncoderKeepsThePretrainedWeights) {
  TempDir runs;
  const std::string run = (runs.path() / "run").string();
  finetune(run, pretrained_checkpoint(), {"finetune.freeze_encoder=true", "train.max_epochs=1"});
  const auto pretrained = safetensors::File::read(pretrained_checkpoint() + "/model.safetensors");
  const auto tuned = safetensors::File::read(list_checkpoints(run + "/checkpoints").back().path + "/model.safetensors");
  int compared = 0;
  for (const auto& name : tuned.names()) {
    if (name.rfind("classifier.", 0) == 0) continue;
    EXPECT_EQ(pretrained.as_doubles(name), tuned.as_doubles(name)) << name;
    ++compared;
  }
  EXPECT_GT(compared, 10);
}

TEST_F(Finetune, SigtermThenTheHintedCommandEqualsAnUninterruptedRun) {
  TempDir runs;
  const std::string straight = (runs.path() / "straight").string();
  finetune(straight, "none");
  const std::string run = (runs.path() / "run").string();
  std::string command = kBinary + " finetune --recipe " + recipe_ + " --checkpoint none --run-dir " + run;
  for (const auto& s : settings()) command += " --set '" + s + "'";
  const auto r =
      testing::run_command(command + " 2>&1 & pid=$!; for i in $(seq 1200); do grep -q 'update 25/' '" + run +
                           "/train.log' 2>/dev/null && break; sleep 0.01; done; kill -TERM $pid; wait $pid");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_THAT(r.output, HasSubstr("interrupted by SIGTERM")) << "the run ended before the signal";
  std::smatch hint;
  ASSERT_TRUE(std::regex_search(r.output, hint, std::regex("continue with: linformer (finetune [^\n]*)"))) << r.output;
  const auto resumed = testing::run_command(kBinary + " " + hint[1].str());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(metric_rows(run), metric_rows(straight));
  EXPECT_EQ(final_weights(run), final_weights(straight));
  EXPECT_EQ(results_without_time(run), results_without_time(straight));
}

// lr 0: the validation loss never falls after the first epoch, so patience 1 stops after the
// second; resuming the stopped run (or a finished one) adds no update, row or checkpoint.
TEST_F(Finetune, EarlyStopAndResumingAFinishedRunChangeNothing) {
  TempDir runs;
  const std::string run = (runs.path() / "run").string();
  const std::vector<std::string> more = {"optim.lr=0", "validation.patience=1"};
  EXPECT_EQ(finetune(run, "none", more).updates, 2 * 16);
  const auto rows = metric_rows(run);
  const auto checkpoints = list_checkpoints(run + "/checkpoints");
  EXPECT_EQ(finetune(run, "none", more, "auto").updates, 2 * 16);
  EXPECT_EQ(metric_rows(run), rows);
  EXPECT_EQ(list_checkpoints(run + "/checkpoints").size(), checkpoints.size());
  EXPECT_THAT(read_file(run + "/train.log"), HasSubstr("already finished at update 32"));
}

// One training loop for both jobs: every [train], [validation] and [checkpoint] key that
// pretraining honours takes effect in fine-tuning too (64 training documents in batches of 4:
// 16 batches an epoch; the settings validate and checkpoint after every epoch).
TEST_F(Finetune, EveryTrainValidationAndCheckpointKeyTakesEffect) {
  TempDir runs;
  int next = 0;
  auto run = [&](std::vector<std::string> more) {
    const std::string dir = (runs.path() / std::to_string(next++)).string();
    const FinetuneSummary s = finetune(dir, "none", std::move(more));
    return std::pair{s, dir};
  };
  EXPECT_EQ(run({"train.max_updates=5"}).first.updates, 5);
  EXPECT_EQ(run({"train.max_epochs=2"}).first.updates, 32);
  EXPECT_EQ(run({"train.max_minutes=0.000001"}).first.updates, 1) << "stops after the first update";
  EXPECT_EQ(run({"train.accumulation=2"}).first.updates, 6 * 8) << "two batches an update: 8 updates an epoch";

  // max_tokens: the first update whose cumulative tokens reach it.
  const auto [tokens_run, tokens_dir] = run({"train.max_tokens=300", "logging.every=1"});
  const auto train_rows = rows_of(metric_rows(tokens_dir), "train");
  ASSERT_EQ(static_cast<int64_t>(train_rows.size()), tokens_run.updates);
  auto tokens_at = [&](size_t i) { return std::stoll(train_rows[i].substr(train_rows[i].find(',', 6) + 1)); };
  EXPECT_GE(tokens_at(train_rows.size() - 1), 300);
  ASSERT_GE(train_rows.size(), 2u);
  EXPECT_LT(tokens_at(train_rows.size() - 2), 300);

  // Validation and checkpoint cadences, in updates and in epochs.
  const auto [every, every_dir] = run({"train.max_epochs=1", "validation.every=5", "validation.every_epochs=0"});
  EXPECT_EQ(updates_of(rows_of(metric_rows(every_dir), "valid")), (std::vector<int64_t>{5, 10, 15, 16}))
      << "every 5 updates and at the end";
  const auto [epochs, epochs_dir] = run({"validation.every_epochs=2"});
  EXPECT_EQ(updates_of(rows_of(metric_rows(epochs_dir), "valid")), (std::vector<int64_t>{32, 64, 96}));
  const auto [saved, saved_dir] = run({"train.max_epochs=1", "checkpoint.every=6", "checkpoint.every_epochs=0",
                                       "checkpoint.keep_last=10", "checkpoint.keep_best=false"});
  std::vector<int> checkpoints;
  for (const auto& c : list_checkpoints(saved_dir + "/checkpoints")) checkpoints.push_back(static_cast<int>(c.update));
  EXPECT_EQ(checkpoints, (std::vector<int>{6, 12, 16}));

  // validation.max_batches: the first batch of 4 validation documents only; 0: all 24.
  const auto [limited, limited_dir] = run({"train.max_epochs=1", "validation.max_batches=1"});
  EXPECT_THAT(read_file(limited_dir + "/train.log"), HasSubstr("valid | update 16 | loss"));
  EXPECT_THAT(read_file(limited_dir + "/train.log"), HasSubstr("| 4 documents"));
  const auto [all, all_dir] = run({"train.max_epochs=1", "validation.max_batches=0"});
  EXPECT_THAT(read_file(all_dir + "/train.log"), HasSubstr("| 24 documents"));
  EXPECT_THAT(read_file(all_dir + "/train.log"), Not(HasSubstr("| 4 documents")));
}

// A resume on a reordered label list would swap the classes: refused, naming the key.
TEST_F(Finetune, AResumeWithReorderedLabelsIsRefused) {
  TempDir runs;
  const std::string run = (runs.path() / "run").string();
  finetune(run, "none", {"train.max_epochs=1"});
  try {
    finetune(run, "none", {"train.max_epochs=2", "finetune.labels=[\"yes\", \"no\"]"}, "auto");
    FAIL() << "resumed with the labels reordered";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("finetune.labels"));
  }
  EXPECT_EQ(finetune(run, "none", {"train.max_epochs=2"}, "auto").updates, 32) << "the same order resumes";
}

// A kill while the test file is scored (after the last checkpoint): results.json is missing, and
// the resumed run scores again, with the test row once.
TEST_F(Finetune, AResumeAfterAKillDuringTestScoringScoresAgain) {
  TempDir runs;
  const std::string run = (runs.path() / "run").string();
  const FinetuneSummary first = finetune(run, "none", {"train.max_epochs=1"});
  const auto results = results_without_time(run);
  const auto rows = metric_rows(run);
  fs::remove(run + "/results.json");
  const FinetuneSummary again = finetune(run, "none", {"train.max_epochs=1"}, "auto");
  EXPECT_EQ(again.updates, first.updates);
  EXPECT_EQ(again.test_accuracy, first.test_accuracy);
  EXPECT_EQ(results_without_time(run), results);
  EXPECT_EQ(metric_rows(run), rows) << "the test row is replaced, not added";
}

// A fine-tuning checkpoint holds everything a resume needs: the pretrained checkpoint it started
// from may be gone.
TEST_F(Finetune, AResumeNeedsNotThePretrainedCheckpoint) {
  TempDir runs;
  const std::string copy = (runs.path() / "pretrained_copy").string();
  fs::copy(pretrained_checkpoint(), copy, fs::copy_options::recursive);
  const std::string run = (runs.path() / "run").string();
  finetune(run, copy, {"train.max_epochs=1"});
  fs::remove_all(copy);
  EXPECT_EQ(finetune(run, copy, {"train.max_epochs=2"}, "auto").updates, 32);
}

TEST_F(Finetune, BadInputIsRefusedNamingTheKeyOrFile) {
  TempDir runs, files;
  const std::string run = (runs.path() / "run").string();
  auto error_of = [&](const std::string& checkpoint, std::vector<std::string> more) {
    try {
      finetune(run, checkpoint, std::move(more));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error_of("", {}), HasSubstr("finetune.checkpoint is empty"));
  EXPECT_THAT(error_of("none", {"finetune.train=\"\""}), HasSubstr("finetune.train is empty"));
  EXPECT_THAT(error_of("none", {"train.short_seq_len=8", "train.short_seq_updates=2"}),
              HasSubstr("the sequence-length warm-up is for pretraining"));
  EXPECT_THAT(error_of("none", {"validation.mask_probability=0.15"}), HasSubstr("validation.mask_probability"));
  EXPECT_THAT(error_of("none", {"validation.shuffle_words=true"}), HasSubstr("validation.shuffle_words"));
  EXPECT_THAT(error_of("none", {"train.max_epochs=0"}), HasSubstr("train.max_updates and train.max_epochs are 0"));
  const std::string one_label = files.write("one.jsonl", "{\"text\": \"ka lo\", \"label\": \"yes\"}\n");
  EXPECT_THAT(error_of("none", {"finetune.train=" + one_label}), HasSubstr("classification needs at least two labels"));
  const std::string unknown = files.write("unknown.jsonl", "{\"text\": \"ka lo\", \"label\": \"maybe\"}\n");
  EXPECT_THAT(error_of("none", {"finetune.valid=" + unknown}),
              HasSubstr(unknown + ": document 1 has the label 'maybe'"));
  const std::string no_text = files.write("no_text.jsonl", "{\"body\": \"ka lo\", \"label\": \"yes\"}\n");
  EXPECT_THAT(error_of("none", {"finetune.train=" + no_text}), HasSubstr(no_text + ":1: no string field \"text\""));
  EXPECT_THAT(error_of(runs.path().string(), {}), HasSubstr(runs.path().string()));  // not a checkpoint
  EXPECT_TRUE(list_checkpoints(run + "/checkpoints").empty()) << "a refused run wrote a checkpoint";
}

}  // namespace
}  // namespace linformer

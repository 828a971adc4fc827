// Fine-tuning end to end (linformer finetune, classify) on the training tests' tiny corpus: a
// task the encoder must learn through attention (the label is in one word of the document; the
// head reads position 0), from a pretrained checkpoint and from a random encoder; exact resume
// after SIGTERM; bad input refused with the key or file named.

#include "linformer/finetune/finetuner.h"
#include "linformer/nn/safetensors.h"
#include "train_fixture.h"

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <regex>

namespace linformer {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

const std::string kBinary = "'" LINFORMER_BINARY "'";

class Finetune : public testing::TrainFixture {
 protected:
  static void SetUpTestSuite() {
    TrainFixture::SetUpTestSuite();
    // Documents of 1-2 made-up sentences (n is 32 tokens); the label says which of two marker
    // words the first sentence starts with.
    const auto sentences = testing::synthetic_sentences(600, 7);
    Rng rng(3);
    size_t next = 0;
    for (const char* split : {"train", "valid", "test"}) {
      std::string lines;
      const int documents = std::string(split) == "train" ? 64 : 24;
      for (int d = 0; d < documents; ++d) {
        const bool yes = d % 2 == 0;
        std::string text = std::string(yes ? "trutrutru " : "pelpelpel ") + sentences[next++ % sentences.size()];
        if (rng.below(2)) text += "\n" + sentences[next++ % sentences.size()];
        lines += nlohmann::json{{"text", text}, {"label", yes ? "yes" : "no"}}.dump() + "\n";
      }
      files_[split] = dir_->write(std::string("labelled/") + split + ".jsonl", lines);
    }
    pretrained_ = (dir_->path() / "pretrained").string();
    train(pretrained_, {"train.max_updates=20"});
  }

  static std::vector<std::string> settings(std::vector<std::string> more = {}) {
    std::vector<std::string> s = {"finetune.train=" + files_["train"], "finetune.valid=" + files_["valid"],
                                  "finetune.test=" + files_["test"],   "finetune.epochs=6",
                                  "optim.lr=0.003",                     "optim.warmup_updates=10",
                                  "finetune.classifier_dropout=0.1",    "model.dropout=0.1",
                                  "logging.every=5"};
    s.insert(s.end(), more.begin(), more.end());
    return s;
  }
  static std::string pretrained_checkpoint() { return list_checkpoints(pretrained_ + "/checkpoints").back().path; }
  static FinetuneSummary finetune(const std::string& run_dir, const std::string& checkpoint,
                                  std::vector<std::string> more = {}, const std::string& resume = "") {
    FinetuneOptions o;
    o.recipe_path = recipe_;
    o.overrides = settings(std::move(more));
    o.checkpoint = checkpoint;
    o.run_dir = run_dir;
    o.resume = resume;
    return run_finetuning(o);
  }

  static inline std::map<std::string, std::string> files_;
  static inline std::string pretrained_;
};

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
  const auto r = testing::run_linformer("--log-level error classify --checkpoint " + list_checkpoints(run + "/checkpoints").back().path +
                                        " " + yes + " " + files_["test"]);
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
  finetune(run, pretrained_checkpoint(), {"finetune.freeze_encoder=true", "finetune.epochs=1"});
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
  const auto r = testing::run_command(command + " 2>&1 & pid=$!; for i in $(seq 1200); do grep -q 'update 25/' '" + run +
                                      "/train.log' 2>/dev/null && break; sleep 0.01; done; kill -TERM $pid; wait $pid");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_THAT(r.output, HasSubstr("interrupted by SIGTERM")) << "the run ended before the signal";
  std::smatch hint;
  ASSERT_TRUE(std::regex_search(r.output, hint, std::regex("continue with: linformer (finetune [^\n]*)"))) << r.output;
  const auto resumed = testing::run_command(kBinary + " " + hint[1].str());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(metric_rows(run), metric_rows(straight));
  EXPECT_EQ(final_weights(run), final_weights(straight));
  auto results = [](const std::string& dir) {
    auto j = nlohmann::json::parse(read_file(dir + "/results.json"));
    j.erase("elapsed_seconds");
    return j;
  };
  EXPECT_EQ(results(run), results(straight));
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
  const std::string one_label = files.write("one.jsonl", "{\"text\": \"ka lo\", \"label\": \"yes\"}\n");
  EXPECT_THAT(error_of("none", {"finetune.train=" + one_label}), HasSubstr("classification needs at least two labels"));
  const std::string unknown = files.write("unknown.jsonl", "{\"text\": \"ka lo\", \"label\": \"maybe\"}\n");
  EXPECT_THAT(error_of("none", {"finetune.valid=" + unknown}), HasSubstr(unknown + ": document 1 has the label 'maybe'"));
  const std::string no_text = files.write("no_text.jsonl", "{\"body\": \"ka lo\", \"label\": \"yes\"}\n");
  EXPECT_THAT(error_of("none", {"finetune.train=" + no_text}), HasSubstr(no_text + ":1: no string field \"text\""));
  EXPECT_THAT(error_of(runs.path().string(), {}), HasSubstr(runs.path().string()));  // not a checkpoint
  EXPECT_TRUE(list_checkpoints(run + "/checkpoints").empty()) << "a refused run wrote a checkpoint";
}

}  // namespace
}  // namespace linformer

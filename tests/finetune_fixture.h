#pragma once
// The fixture of the fine-tuning tests (finetune_test.cpp, finetune_reliability_test.cpp): a
// labelled task on the training fixture's tiny corpus and an encoder pretrained on it.

#include "linformer/core/rng.h"
#include "linformer/finetune/finetuner.h"
#include "train_fixture.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace linformer::testing {

class FinetuneFixture : public TrainFixture {
 protected:
  static void SetUpTestSuite() {
    TrainFixture::SetUpTestSuite();
    // Documents of 1-2 made-up sentences (n is 32 tokens); the label says which of two marker
    // words the first sentence starts with.
    const auto sentences = synthetic_sentences(600, 7);
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
    std::vector<std::string> s = {"finetune.train=" + files_["train"],
                                  "finetune.valid=" + files_["valid"],
                                  "finetune.test=" + files_["test"],
                                  "train.max_epochs=6",
                                  "train.max_updates=0",
                                  "validation.every=0",
                                  "validation.every_epochs=1",
                                  "validation.mask_probability=0",
                                  "checkpoint.every=0",
                                  "checkpoint.every_epochs=1",
                                  "optim.lr=0.003",
                                  "optim.warmup_updates=10",
                                  "finetune.classifier_dropout=0.1",
                                  "model.dropout=0.1",
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

  // results.json without its wall-clock field.
  static nlohmann::json results_without_time(const std::string& run_dir) {
    auto j = nlohmann::json::parse(read_file(run_dir + "/results.json"));
    j.erase("elapsed_seconds");
    return j;
  }

  // The run at `run` ended exactly as the undisturbed one at `straight`.
  static void expect_same_run(const std::string& run, const std::string& straight) {
    EXPECT_EQ(metric_rows(run), metric_rows(straight));
    EXPECT_EQ(final_weights(run), final_weights(straight));
    EXPECT_EQ(results_without_time(run), results_without_time(straight));
  }

  // The `linformer finetune` command line of settings(more) from a random encoder.
  static std::string finetune_command(const std::string& run_dir, std::vector<std::string> more = {}) {
    std::string command =
        "'" LINFORMER_BINARY "' finetune --recipe " + recipe_ + " --checkpoint none --run-dir '" + run_dir + "'";
    for (const auto& s : settings(std::move(more))) command += " --set '" + s + "'";
    return command;
  }

  static inline std::map<std::string, std::string> files_;
  static inline std::string pretrained_;
};

}  // namespace linformer::testing

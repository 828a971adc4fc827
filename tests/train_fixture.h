#pragma once
// The fixture of the end-to-end training tests (train_test.cpp, reliability_test.cpp): a small
// made-up corpus prepared once per suite, training through run_training, metrics and weights.

#include "data_test_corpus.h"
#include "linformer/core/fs.h"
#include "linformer/train/checkpoint.h"
#include "linformer/train/trainer.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace linformer::testing {

// A prepared corpus shared by a suite's tests (prepare runs once per suite), and the run
// helpers of the end-to-end training tests.
class TrainFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    dir_->write("corpus/a.txt", testing::synthetic_text(30, 8, 1));
    dir_->write("corpus/b.txt", testing::synthetic_text(30, 8, 2));
    recipe_ =
        dir_->write("tiny.toml", "base = \"" LINFORMER_SOURCE_DIR
                                 "/recipes/ci/tiny.toml\"\n"
                                 "[data]\ncorpus = [\"" +
                                     (dir_->path() / "corpus").string() + "\"]\nprepared_dir = \"" +
                                     (dir_->path() / "prepared").string() +
                                     "\"\nvocab_size = 150\nseq_len = 32\nvalid_fraction = 0.1\ntest_fraction = 0.1\n"
                                     "[model]\nk = 8\n[train]\nbatch_size = 4\n[logging]\nevery = 2\n"
                                     "[validation]\nevery = 4\n[checkpoint]\nevery = 4\nkeep_last = 10\n");
    const auto r = testing::run_linformer("prepare --recipe " + recipe_);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static TrainSummary train(const std::string& run_dir, std::vector<std::string> overrides,
                            const std::string& resume = "") {
    TrainOptions o;
    o.recipe_path = recipe_;
    o.overrides = std::move(overrides);
    o.run_dir = run_dir;
    o.resume = resume;
    return run_training(o);
  }

  // metrics.csv without the wall-clock columns (tokens_per_second, elapsed_seconds).
  static std::vector<std::string> metric_rows(const std::string& run_dir) { return testing::metric_rows(run_dir); }

  // Rows of one kind (train, valid, test) of metric_rows, in order.
  static std::vector<std::string> rows_of(const std::vector<std::string>& rows, const std::string& kind) {
    std::vector<std::string> out;
    for (const auto& r : rows)
      if (r.rfind(kind + ",", 0) == 0) out.push_back(r);
    return out;
  }

  // The update column of rows.
  static std::vector<int64_t> updates_of(const std::vector<std::string>& rows) {
    std::vector<int64_t> out;
    for (const auto& r : rows) out.push_back(std::stoll(r.substr(r.find(',') + 1)));
    return out;
  }

  // The final checkpoint of a run of 8 updates validated on the whole valid split.
  static std::string trained_checkpoint(const std::string& run_dir) {
    train(run_dir, {"train.max_updates=8", "validation.max_batches=0"});
    return list_checkpoints(run_dir + "/checkpoints").back().path;
  }

  static std::string final_weights(const std::string& run_dir) {
    const auto all = list_checkpoints(run_dir + "/checkpoints");
    return read_file(all.back().path + "/model.safetensors");
  }

  static inline TempDir* dir_ = nullptr;
  static inline std::string recipe_;
};

}  // namespace linformer::testing

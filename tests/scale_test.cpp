// A corpus far larger than Brown, end to end (issue 46): generated Wikipedia-like text at two
// sizes ten times apart (5 and 50 MB; 1 and 10 MB under the sanitizers) through prepare and
// train with the defaults that matter at scale. Memory stays flat as the corpus grows tenfold,
// the tokenizer's sample stays within data.tokenizer_max_bytes, validation is bounded by
// validation.max_tokens whatever the split's size, and a run resumes exactly.

#include "linformer/core/fs.h"
#include "linformer/train/checkpoint.h"
#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>
#include <sstream>

#if defined(__SANITIZE_ADDRESS__)
#define LINFORMER_SCALE_TEST_SMALL 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LINFORMER_SCALE_TEST_SMALL 1
#endif
#endif

namespace linformer {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
namespace fs = std::filesystem;

// Under the sanitizers (about 5x slower) a tenth of the text, and no memory bounds: ASan's shadow
// memory and quarantine make RSS say nothing of the program's own (1.1 GB for 1 MB of text).
#ifdef LINFORMER_SCALE_TEST_SMALL
constexpr int64_t kSmallBytes = 1'000'000, kLargeBytes = 10'000'000;
constexpr int64_t kValidTokens = 50'000;  // validation.max_tokens, below the large split's valid tokens
constexpr bool kMeasureMemory = false;
#else
constexpr int64_t kSmallBytes = 5'000'000, kLargeBytes = 50'000'000;
constexpr int64_t kValidTokens = 200'000;
constexpr bool kMeasureMemory = true;
#endif
constexpr int64_t kSampleBytes = 4 << 20;  // data.tokenizer_max_bytes: both corpora fill it
constexpr int64_t kBatch = 8, kSeqLen = 128;

// A command's output and the peak resident memory GNU time reports for it.
struct Measured {
  testing::CommandResult result;
  int64_t peak_kb = 0;
};

Measured measured(const std::string& command) {
  Measured m{testing::run_command("/usr/bin/time -f 'peak_kb=%M' " + command), 0};
  std::smatch peak;
  if (std::regex_search(m.result.output, peak, std::regex("peak_kb=([0-9]+)"))) m.peak_kb = std::stoll(peak[1]);
  return m;
}

class Scale : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    for (const auto& [name, bytes] : {std::pair{"small", kSmallBytes}, std::pair{"large", kLargeBytes}}) {
      const std::string corpus = (dir_->path() / (std::string(name) + ".xml")).string();
      const auto made = testing::run_command("/usr/bin/python3 '" LINFORMER_SOURCE_DIR "/scripts/make_corpus.py' " +
                                             corpus + " " + std::to_string(bytes) + " --format wikiextractor --seed 7");
      ASSERT_EQ(made.exit_code, 0) << made.output;
      recipes_[name] = dir_->write(
          std::string(name) + ".toml",
          "base = \"" LINFORMER_SOURCE_DIR "/recipes/ci/tiny.toml\"\nname = \"" + std::string(name) +
              "\"\n[data]\ncorpus = [\"" + corpus + "\"]\nprepared_dir = \"" +
              (dir_->path() / "prepared" / name).string() +
              "\"\nvocab_size = 2000\nseq_len = " + std::to_string(kSeqLen) +
              "\nvalid_fraction = 0.1\ntest_fraction = 0.01\ntokenizer_max_bytes = " + std::to_string(kSampleBytes) +
              "\n[train]\nbatch_size = " + std::to_string(kBatch) +
              "\n[validation]\nevery = 3\nmax_batches = 0\nmax_tokens = " + std::to_string(kValidTokens) +
              "\n[checkpoint]\nevery = 3\n[logging]\nevery = 1\n");
      prepare_[name] = measured("'" LINFORMER_BINARY "' prepare --recipe " + recipes_[name]);
      ASSERT_EQ(prepare_[name].result.exit_code, 0) << prepare_[name].result.output;
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static nlohmann::json meta(const std::string& name) {
    return nlohmann::json::parse(read_file((dir_->path() / "prepared" / name / "meta.json").string()));
  }
  static Measured train(const std::string& name, const std::string& run, const std::string& more = "") {
    return measured("'" LINFORMER_BINARY "' train --recipe " + recipes_[name] + " --run-dir " + run + " " + more);
  }

  static inline TempDir* dir_ = nullptr;
  static inline std::map<std::string, std::string> recipes_;
  static inline std::map<std::string, Measured> prepare_;
};

TEST_F(Scale, PrepareMemoryStaysFlatAsTheCorpusGrowsTenfold) {
  const auto small = meta("small"), large = meta("large");
  EXPECT_GE(large["summary"]["text_bytes"].get<double>(), 0.9 * kLargeBytes);
  for (const auto* m : {&small, &large})
    EXPECT_LE((*m)["tokenizer"]["sample_bytes"].get<int64_t>(), kSampleBytes) << "the sample outgrew its bound";
  const int64_t small_kb = prepare_["small"].peak_kb, large_kb = prepare_["large"].peak_kb;
  ASSERT_GT(small_kb, 0) << prepare_["small"].result.output;
  // Ten times the text, the same sample: within 30% (and 64 MiB) of the small corpus's peak.
  if (kMeasureMemory) {
    EXPECT_LT(large_kb, small_kb * 13 / 10 + (64 << 10))
        << "prepare's memory grew with the corpus: " << small_kb << " kB for " << kSmallBytes << " bytes, " << large_kb
        << " kB for " << kLargeBytes;
  }
  // The shards hold every token: about one token for every 2 to 8 bytes of text.
  const double tokens = large["summary"]["tokens"].get<double>();
  EXPECT_GT(tokens, kLargeBytes / 8.0);
  EXPECT_LT(tokens, kLargeBytes / 2.0);
}

// validation.max_tokens bounds each validation to the valid split's first batches (here well
// under the large split), so its cost does not grow with the corpus; training memory stays flat
// and a resumed run equals an uninterrupted one.
TEST_F(Scale, TrainingValidatesWithinItsBoundStaysFlatAndResumesExactly) {
  TempDir runs;
  const std::string small = (runs.path() / "small").string(), straight = (runs.path() / "straight").string();
  const auto small_run = train("small", small, "--set train.max_updates=6");
  const auto large_run = train("large", straight, "--set train.max_updates=6");
  ASSERT_EQ(large_run.result.exit_code, 0) << large_run.result.output;
  ASSERT_EQ(small_run.result.exit_code, 0) << small_run.result.output;
  const int64_t bound_batches = (kValidTokens + kBatch * kSeqLen - 1) / (kBatch * kSeqLen);
  const int64_t valid_batches =
      meta("large")["summary"]["splits"]["valid"]["tokens"].get<int64_t>() / (kBatch * kSeqLen);
  ASSERT_GT(valid_batches, 2 * bound_batches) << "the large valid split no longer exceeds the bound: raise kLargeBytes";
  EXPECT_THAT(large_run.result.output,
              HasSubstr("validation: the first " + std::to_string(bound_batches) + " of the valid split's"));
  if (kMeasureMemory) {
    EXPECT_LT(large_run.peak_kb, small_run.peak_kb + (100 << 10)) << "train's memory grew with the corpus";
  }

  const std::string resumed = (runs.path() / "resumed").string();
  ASSERT_EQ(train("large", resumed, "--set train.max_updates=3").result.exit_code, 0);
  ASSERT_EQ(train("large", resumed, "--set train.max_updates=6 --resume auto").result.exit_code, 0);
  EXPECT_EQ(testing::metric_rows(resumed), testing::metric_rows(straight));
  const auto weights = [](const std::string& run) {
    return read_file(list_checkpoints(run + "/checkpoints").back().path + "/model.safetensors");
  };
  EXPECT_EQ(weights(resumed), weights(straight));
}

}  // namespace
}  // namespace linformer

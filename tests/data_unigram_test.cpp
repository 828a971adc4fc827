// The unigram baseline against values worked out by hand.

#include "linformer/core/check.h"
#include "linformer/data/shard.h"
#include "linformer/data/unigram.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>

namespace linformer::data {
namespace {

using testing::TempDir;

Shard shard_of(const TempDir& dir, const std::string& name, const std::vector<std::vector<int32_t>>& docs) {
  const std::string path = (dir.path() / name).string();
  ShardWriter w(path, 8, 0x1234);
  for (const auto& d : docs) w.add_document(d);
  w.finish();
  return Shard::open(path);
}

TEST(Unigram, SmoothedTrainingFrequenciesOverOrdinaryTokens) {
  TempDir dir;
  // V = 8: ordinary ids 5, 6, 7. Training counts 5: 2, 6: 1, 7: 0 (specials not counted), N = 3.
  // p = (count + 1/2) / (3 + 3/2): p5 = 2.5/4.5, p6 = 1.5/4.5, p7 = 0.5/4.5.
  const UnigramModel unigram(shard_of(dir, "train.bin", {{1, 5, 5, 2}, {1, 6, 3, 2}}));
  EXPECT_EQ(unigram.train_tokens(), 3);
  EXPECT_NEAR(unigram.nll(5), -std::log(2.5 / 4.5), 1e-12);
  EXPECT_NEAR(unigram.nll(6), -std::log(1.5 / 4.5), 1e-12);
  EXPECT_NEAR(unigram.nll(7), -std::log(0.5 / 4.5), 1e-12);
  // The valid split scores 5 and 7 only: perplexity (p5 p7)^(-1/2) = 4.5 / √1.25.
  EXPECT_NEAR(unigram.perplexity(shard_of(dir, "valid.bin", {{1, 5, 7, 2}, {0, 4, 3}})), 4.5 / std::sqrt(1.25), 1e-12);
  // Nothing to score: perplexity 1.
  EXPECT_EQ(unigram.perplexity(shard_of(dir, "empty.bin", {{1, 2}})), 1.0);
}

// The counts that prepare keeps while encoding give the model and perplexities a shard gives.
TEST(Unigram, FromCountsAsFromTheShard) {
  // The shard of the test above, counted by hand: ids 0..7 (specials are never scored).
  const UnigramModel unigram(std::vector<int64_t>{0, 2, 2, 1, 0, 2, 1, 0});
  EXPECT_EQ(unigram.train_tokens(), 3);
  EXPECT_NEAR(unigram.nll(7), -std::log(0.5 / 4.5), 1e-12);
  EXPECT_NEAR(unigram.perplexity(std::vector<int64_t>{1, 1, 1, 1, 1, 1, 0, 1}), 4.5 / std::sqrt(1.25), 1e-12);
  TempDir dir;
  const Shard valid = shard_of(dir, "valid.bin", {{1, 5, 7, 2}, {0, 4, 3}, {6, 6, 5}});
  EXPECT_EQ(UnigramModel::count(valid), (std::vector<int64_t>{1, 1, 1, 1, 1, 2, 2, 1}));
  EXPECT_EQ(unigram.perplexity(valid), unigram.perplexity(UnigramModel::count(valid)));
  EXPECT_THROW(unigram.perplexity(std::vector<int64_t>(9, 1)), Error);
}

}  // namespace
}  // namespace linformer::data

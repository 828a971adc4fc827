#include "linformer/core/rng.h"

#include "linformer/core/check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace linformer {
namespace {

// Known-answer vectors published with Random123 (kat_vectors, "philox4x32 10"):
// counter[4], key[2] -> output[4].
TEST(Philox, MatchesRandom123KnownAnswers) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, BatchEqualsTheScalarBlocks) {
  // Including a block index that carries into the counter's second word.
  for (uint64_t first : {uint64_t{0}, uint64_t{0xfffffffc}, uint64_t{0x123456789a}}) {
    const uint64_t lane = 0xfedcba9876543210ull;
    const PhiloxKey key = {0xa4093822, 0x299f31d0};
    uint32_t words[4][kPhiloxBatch];
    philox4x32_10_batch(first, lane, key, words);
    for (int i = 0; i < kPhiloxBatch; ++i) {
      const uint64_t block = first + i;
      const PhiloxCounter expected = philox4x32_10({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                                                    static_cast<uint32_t>(lane), static_cast<uint32_t>(lane >> 32)},
                                                   key);
      for (int w = 0; w < 4; ++w) ASSERT_EQ(words[w][i], expected[w]) << "block " << block << " word " << w;
    }
  }
}

TEST(Rng, FirstWordsAreThePhiloxBlockOfCounterZero) {
  Rng rng(/*seed=*/0, /*stream=*/0);
  const PhiloxCounter block = philox4x32_10({0, 0, 0, 0}, {0, 0});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(rng.next_u32(), block[i]);
  EXPECT_EQ(rng.next_u32(), philox4x32_10({1, 0, 0, 0}, {0, 0})[0]);
}

TEST(Rng, SavedStateResumesTheSameSequence) {
  Rng rng(1234, stream_id({7, 3}));
  for (int i = 0; i < 13; ++i) rng.next_u32();  // stop mid-block
  rng.normal();
  rng.below(1000);
  const RngState saved = rng.state();

  std::vector<uint64_t> expected;
  for (int i = 0; i < 50; ++i) expected.push_back(rng.next_u64() ^ rng.below(97));

  Rng resumed(saved);
  EXPECT_EQ(resumed.state(), saved);
  for (int i = 0; i < 50; ++i) ASSERT_EQ(resumed.next_u64() ^ resumed.below(97), expected[i]) << "draw " << i;

  Rng other;
  other.set_state(saved);
  EXPECT_EQ(other.next_u64(), Rng(saved).next_u64());
}

TEST(Rng, SeedsAndStreamsGiveDifferentSequences) {
  auto first_words = [](Rng rng) {
    std::vector<uint32_t> v;
    for (int i = 0; i < 8; ++i) v.push_back(rng.next_u32());
    return v;
  };
  EXPECT_NE(first_words(Rng(1, 0)), first_words(Rng(2, 0)));
  EXPECT_NE(first_words(Rng(1, 0)), first_words(Rng(1, 1)));
  EXPECT_EQ(first_words(Rng(1, 5)), first_words(Rng(1, 5)));
  EXPECT_NE(stream_id({1, 2}), stream_id({2, 1}));
  EXPECT_EQ(stream_id({1, 2}), stream_id({1, 2}));
}

TEST(Rng, UniformIsInRangeWithTheRightMoments) {
  Rng rng(42);
  const int n = 200000;
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const float u = rng.uniform();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    sum_sq += u * u;
  }
  const double mean = sum / n, var = sum_sq / n - mean * mean;
  // Standard error of the mean: sqrt(1/12 / n) ≈ 6.5e-4; allow 5 sigma.
  EXPECT_NEAR(mean, 0.5, 3.3e-3);
  EXPECT_NEAR(var, 1.0 / 12.0, 2e-3);
}

TEST(Rng, BelowIsUnbiased) {
  Rng rng(7);
  const int buckets = 6, n = 120000;
  std::vector<int> count(buckets);
  for (int i = 0; i < n; ++i) {
    const uint64_t x = rng.below(buckets);
    ASSERT_LT(x, static_cast<uint64_t>(buckets));
    ++count[x];
  }
  // Chi-square with 5 degrees of freedom; P(chi2 > 20.5) ≈ 0.001.
  double chi2 = 0;
  const double expected = static_cast<double>(n) / buckets;
  for (int c : count) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 20.5);
  EXPECT_THROW(rng.below(0), Error);
}

TEST(Rng, NormalHasZeroMeanUnitVariance) {
  Rng rng(99);
  const int n = 200000;
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double z = rng.normal();
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sum_sq += z * z;
  }
  const double mean = sum / n, var = sum_sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.012);  // 5 standard errors (1/sqrt(n) ≈ 2.2e-3)
  EXPECT_NEAR(var, 1.0, 0.016);   // 5 standard errors (sqrt(2/n) ≈ 3.2e-3)
}

}  // namespace
}  // namespace linformer

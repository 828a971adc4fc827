// The tokenizer's sample: uniform, deterministic in the seed, within both bounds whatever the
// sentences' lengths (a huge line cut into pieces included).

#include "linformer/core/rng.h"
#include "linformer/data/corpus.h"
#include "linformer/data/sentence_sampler.h"
#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace linformer::data {
namespace {

constexpr uint64_t kNoByteBound = uint64_t{1} << 40;
constexpr int64_t kNoCountBound = int64_t{1} << 40;

uint64_t total_bytes(const std::vector<std::string>& xs) {
  uint64_t n = 0;
  for (const auto& x : xs) n += x.size();
  return n;
}

TEST(SentenceSampler, KeepsAStreamThatFitsWholeAndInOrder) {
  SentenceSampler s(10, 100, 1);
  for (int i = 0; i < 7; ++i) s.add(std::to_string(i));
  EXPECT_FALSE(s.bytes_bound());
  EXPECT_FALSE(s.sentences_bound());
  EXPECT_THAT(s.take(), ::testing::ElementsAre("0", "1", "2", "3", "4", "5", "6"));
}

// Each of 20 equal items is kept with probability 5/20 whichever bound holds it to 5:
// binomial σ of the rate ≈ 0.0068 over 4000 seeds, allow 5σ.
void expect_uniform(int64_t max_sentences, uint64_t max_bytes) {
  constexpr int kItems = 20, kKept = 5, kTrials = 4000;
  std::vector<int> included(kItems, 0);
  for (int seed = 0; seed < kTrials; ++seed) {
    SentenceSampler s(max_sentences, max_bytes, static_cast<uint64_t>(seed));
    for (int i = 0; i < kItems; ++i) s.add(fmt::format("item{:06d}", i));  // 10 bytes each
    const auto sample = s.take();
    ASSERT_EQ(sample.size(), static_cast<size_t>(kKept));
    ASSERT_EQ(std::set<std::string>(sample.begin(), sample.end()).size(), sample.size()) << "seed " << seed;
    for (const auto& x : sample) ++included[static_cast<size_t>(std::stoi(x.substr(4)))];
  }
  for (int i = 0; i < kItems; ++i) EXPECT_NEAR(included[i] / double(kTrials), 0.25, 0.035) << "item " << i;
}

TEST(SentenceSampler, UniformUnderEitherBound) {
  expect_uniform(5, kNoByteBound);
  expect_uniform(kNoCountBound, 50);
  expect_uniform(5, 50);
}

// Short (10 bytes) and long (1000 bytes) sentences in equal numbers: a uniform sample has them in
// equal numbers too, whatever bound cuts it (a sampler that filled up on whatever fits would
// take more short ones), and never holds more bytes than its bound.
TEST(SentenceSampler, MixedLengthsStayWithinTheBytesAndRepresentative) {
  constexpr uint64_t kMaxBytes = 50000;
  int64_t shorts = 0, longs = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    SentenceSampler s(kNoCountBound, kMaxBytes, seed);
    Rng order(1000 + seed);
    for (int i = 0; i < 2000; ++i) s.add(std::string(order.below(2) ? 1000 : 10, 'a' + static_cast<char>(i % 26)));
    EXPECT_TRUE(s.bytes_bound());
    const auto sample = s.take();
    ASSERT_LE(total_bytes(sample), kMaxBytes);
    EXPECT_GT(total_bytes(sample), kMaxBytes - 1000 - 10 * 100) << "the sample stopped well short of its bound";
    for (const auto& x : sample) (x.size() == 1000 ? longs : shorts) += 1;
  }
  // About 50 long sentences per sample (50000 / 1010 × ½ each): 10,000 draws in all, σ of the share ≈ 0.005.
  EXPECT_NEAR(static_cast<double>(longs) / static_cast<double>(longs + shorts), 0.5, 0.03);
}

TEST(SentenceSampler, DeterministicInTheSeedAndNotTheSame) {
  const auto sample = [](uint64_t seed) {
    SentenceSampler s(kNoCountBound, 3000, seed);
    Rng lengths(7);
    for (int i = 0; i < 1000; ++i)
      s.add(std::string(1 + lengths.below(200), 'a' + static_cast<char>(i % 26)) + std::to_string(i));
    return s.take();
  };
  EXPECT_EQ(sample(42), sample(42));
  EXPECT_NE(sample(42), sample(43));
}

TEST(SentenceSampler, ASentenceLargerThanTheBoundIsNeverTaken) {
  SentenceSampler s(kNoCountBound, 100, 3);
  s.add(std::string(50, 'a'));
  s.add(std::string(101, 'b'));
  s.add(std::string(50, 'c'));
  const auto sample = s.take();
  EXPECT_LE(total_bytes(sample), 100u);
  for (const auto& x : sample) EXPECT_NE(x[0], 'b');
}

// A 20 MB line without a newline: the reader cuts it into 64 KiB sentences, and the sample
// holds only what its bound allows of them (the trainer once got them all).
TEST(SentenceSampler, AHugeLineIsSampledWithinTheBound) {
  testing::TempDir dir;
  std::string line;
  Rng rng(5);
  while (line.size() < (20u << 20)) line += fmt::format("word{} ", rng.below(50000));
  const std::string path = dir.write("one_line.txt", line);
  CorpusOptions options;
  options.inputs = {path};
  CorpusReader reader(options);
  constexpr uint64_t kMaxBytes = 1u << 20;
  SentenceSampler s(1000000, kMaxBytes, 11);
  Document doc;
  while (reader.next(doc))
    for (const auto& sentence : doc.sentences) s.add(sentence);
  EXPECT_GE(s.seen(), static_cast<int64_t>((20u << 20) / kMaxSentenceBytes));
  EXPECT_EQ(s.seen_bytes(), reader.stats().text_bytes);
  const auto sample = s.take();
  EXPECT_LE(total_bytes(sample), kMaxBytes);
  EXPECT_GE(total_bytes(sample), kMaxBytes - kMaxSentenceBytes);
  EXPECT_LE(sample.size(), kMaxBytes / (kMaxSentenceBytes / 2));
}

}  // namespace
}  // namespace linformer::data

// MLM masking: rates within statistical tolerance, specials untouched, whole words, determinism.

#include "linformer/core/rng.h"
#include "linformer/data/masking.h"
#include "linformer/data/special_tokens.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

namespace linformer::data {
namespace {

constexpr int kVocab = 1000, kN = 256;

config::MaskingConfig masking(double p = 0.15, double mask = 0.8, double random = 0.1, bool whole_word = false) {
  config::MaskingConfig c;
  c.probability = p;
  c.mask_fraction = mask;
  c.random_fraction = random;
  c.whole_word = whole_word;
  return c;
}

// <s>, ordinary ids with a </s> every 20 tokens and an <unk> every 50, then <pad> from `length`.
std::vector<int32_t> make_row(uint64_t seed, int length) {
  Rng rng(seed);
  std::vector<int32_t> row(kN, kPadId);
  row[0] = kBosId;
  for (int t = 1; t < length; ++t)
    row[t] = t % 20 == 0   ? kEosId
             : t % 50 == 0 ? kUnkId
                           : kFirstOrdinaryId + static_cast<int32_t>(rng.below(kVocab - 5));
  return row;
}

struct Tally {
  int64_t candidates = 0, selected = 0, masked = 0, randomised = 0, kept = 0;
};

Tally run(const Masker& m, int rows) {
  Tally tally;
  for (int s = 0; s < rows; ++s) {
    const int length = 100 + s % (kN - 100);
    const auto original = make_row(s, length);
    auto row = original;
    std::vector<int64_t> pos;
    std::vector<int32_t> tgt;
    m.mask_row(row.data(), length, 0, static_cast<uint64_t>(s), 0, pos, tgt);
    for (int t = 0; t < kN; ++t) tally.candidates += original[t] >= kFirstOrdinaryId;
    std::set<int64_t> selected(pos.begin(), pos.end());
    EXPECT_EQ(selected.size(), pos.size()) << "a position selected twice";
    for (size_t i = 0; i < pos.size(); ++i) {
      const int t = static_cast<int>(pos[i]);
      EXPECT_TRUE(i == 0 || pos[i] > pos[i - 1]) << "positions are not increasing";
      EXPECT_GE(original[t], kFirstOrdinaryId) << "a special token or padding was selected";
      EXPECT_EQ(tgt[i], original[t]);
      if (row[t] == kMaskId)
        ++tally.masked;
      else if (row[t] != original[t])
        ++tally.randomised;
      else
        ++tally.kept;
      EXPECT_TRUE(row[t] == kMaskId || (row[t] >= kFirstOrdinaryId && row[t] < kVocab)) << row[t];
    }
    for (int t = 0; t < kN; ++t) {
      if (!selected.count(t)) {
        EXPECT_EQ(row[t], original[t]) << "an unselected position changed";
      }
    }
    tally.selected += static_cast<int64_t>(pos.size());
  }
  return tally;
}

TEST(Masking, RatesMatchTheConfiguration) {
  struct Case {
    double p, mask, random;
  };
  for (const Case c : {Case{0.15, 0.8, 0.1}, Case{0.4, 0.5, 0.3}, Case{0.05, 1.0, 0.0}}) {
    const Masker m(masking(c.p, c.mask, c.random), kVocab, {}, 3);
    const Tally t = run(m, 3000);
    const double rate = double(t.selected) / t.candidates;
    // ~450k candidates: σ of the rate < 0.001. Within the selected (≥ 22k), σ of a fraction < 0.0016.
    EXPECT_NEAR(rate, c.p, 0.004) << "p " << c.p;
    // A random replacement equal to the original (1 in 995) counts as kept.
    EXPECT_NEAR(double(t.masked) / t.selected, c.mask, 0.008) << "p " << c.p;
    EXPECT_NEAR(double(t.randomised) / t.selected, c.random * (1 - 1.0 / 995), 0.008) << "p " << c.p;
    EXPECT_NEAR(double(t.kept) / t.selected, 1 - c.mask - c.random * (1 - 1.0 / 995), 0.008) << "p " << c.p;
  }
}

// mask_row_by_stream: a token's fate follows its place in the stream, not its row, so cutting the
// stream into rows of any length masks the same tokens the same way (eval --same-targets), at the
// configured rates overall.
TEST(Masking, ByStreamPlaceEveryCutMasksTheSameTokens) {
  const Masker m(masking(), kVocab, {}, 7);
  std::vector<int32_t> stream;  // 40 rows of make_row without their <s> and padding: ~9,000 tokens
  for (uint64_t s = 0; s < 40; ++s) {
    const auto row = make_row(100 + s, kN);
    stream.insert(stream.end(), row.begin() + 1, row.end());
  }
  using Fate = std::pair<int32_t, int32_t>;  // the target's id, the input in its place
  std::map<uint64_t, Fate> first;            // stream place → fate, for the first cut
  for (const size_t cut : {17, 64, 255, 1000}) {
    std::map<uint64_t, Fate> fates;
    for (size_t begin = 0; begin < stream.size(); begin += cut) {
      const size_t take = std::min(cut, stream.size() - begin);
      std::vector<int32_t> row(take + 1, kBosId);
      std::copy(stream.begin() + static_cast<int64_t>(begin), stream.begin() + static_cast<int64_t>(begin + take),
                row.begin() + 1);
      std::vector<int64_t> pos;
      std::vector<int32_t> tgt;
      m.mask_row_by_stream(row.data(), static_cast<int>(take + 1), begin, 0, pos, tgt);
      for (size_t i = 0; i < pos.size(); ++i) {
        ASSERT_GE(pos[i], 1) << "<s> was selected";
        const uint64_t place = begin + static_cast<uint64_t>(pos[i]) - 1;
        EXPECT_EQ(tgt[i], stream[place]);
        EXPECT_GE(stream[place], kFirstOrdinaryId) << "a special token was selected";
        fates[place] = {tgt[i], row[static_cast<size_t>(pos[i])]};
      }
    }
    if (first.empty()) {
      first = fates;
      continue;
    }
    EXPECT_EQ(fates, first) << "rows of " << cut << " tokens masked other tokens than rows of 17";
  }
  int64_t candidates = 0, masked = 0;
  for (const int32_t id : stream) candidates += id >= kFirstOrdinaryId;
  for (const auto& [place, fate] : first) masked += fate.second == kMaskId;
  // ~8,500 candidates: σ of the rate ≈ 0.0039, of the <mask> share among ~1,270 targets ≈ 0.011.
  EXPECT_NEAR(static_cast<double>(first.size()) / static_cast<double>(candidates), 0.15, 0.02);
  EXPECT_NEAR(static_cast<double>(masked) / static_cast<double>(first.size()), 0.8, 0.055);
}

TEST(Masking, ZeroAndOne) {
  EXPECT_EQ(run(Masker(masking(0.0), kVocab, {}, 1), 50).selected, 0);
  const Tally all = run(Masker(masking(1.0), kVocab, {}, 1), 50);
  EXPECT_EQ(all.selected, all.candidates);
}

TEST(Masking, DeterministicInSeedEpochAndSample) {
  const Masker m(masking(), kVocab, {}, 9), same(masking(), kVocab, {}, 9), other_seed(masking(), kVocab, {}, 10);
  auto masked = [](const Masker& masker, uint64_t epoch, uint64_t sample) {
    auto row = make_row(1, kN);
    std::vector<int64_t> pos;
    std::vector<int32_t> tgt;
    masker.mask_row(row.data(), kN, epoch, sample, 0, pos, tgt);
    return std::make_pair(row, pos);
  };
  EXPECT_EQ(masked(m, 2, 5), masked(same, 2, 5));
  EXPECT_EQ(masked(m, 2, 5), masked(m, 2, 5));
  EXPECT_NE(masked(m, 2, 5).second, masked(m, 3, 5).second);
  EXPECT_NE(masked(m, 2, 5).second, masked(m, 2, 6).second);
  EXPECT_NE(masked(m, 2, 5).second, masked(other_seed, 2, 5).second);
  // The offset only shifts positions.
  auto row = make_row(1, kN);
  std::vector<int64_t> pos;
  std::vector<int32_t> tgt;
  m.mask_row(row.data(), kN, 2, 5, 1000, pos, tgt);
  const auto base = masked(m, 2, 5).second;
  ASSERT_EQ(pos.size(), base.size());
  for (size_t i = 0; i < pos.size(); ++i) EXPECT_EQ(pos[i], base[i] + 1000);
}

TEST(Masking, WholeWordsAreSelectedAndTreatedTogether) {
  // Ids 5..99 start words, 100.. continue them.
  std::vector<uint8_t> word_starts(kVocab, 0);
  for (int id = kFirstOrdinaryId; id < 100; ++id) word_starts[id] = 1;
  const Masker m(masking(0.2, 0.8, 0.1, true), kVocab, word_starts, 4);
  Rng rng(8);
  int64_t words = 0, selected_words = 0;
  for (int s = 0; s < 2000; ++s) {
    // <s>, then words of 1-4 pieces, a </s> now and then.
    std::vector<int32_t> row = {kBosId};
    std::vector<std::pair<int, int>> spans;  // [begin, end) of each word
    while (row.size() < kN - 5) {
      if (rng.below(10) == 0) row.push_back(kEosId);
      const int begin = static_cast<int>(row.size());
      row.push_back(5 + static_cast<int32_t>(rng.below(95)));
      for (uint64_t k = 0, extra = rng.below(4); k < extra; ++k)
        row.push_back(100 + static_cast<int32_t>(rng.below(900)));
      spans.emplace_back(begin, static_cast<int>(row.size()));
    }
    const auto original = row;
    std::vector<int64_t> pos;
    std::vector<int32_t> tgt;
    m.mask_row(row.data(), static_cast<int>(row.size()), 0, static_cast<uint64_t>(s), 0, pos, tgt);
    const std::set<int64_t> selected(pos.begin(), pos.end());
    for (const auto& [b, e] : spans) {
      ++words;
      int in = 0, masked = 0;
      for (int t = b; t < e; ++t) {
        in += selected.count(t);
        masked += row[t] == kMaskId;
      }
      ASSERT_TRUE(in == 0 || in == e - b) << "a word was partly selected";
      ASSERT_TRUE(masked == 0 || masked == e - b) << "a word was partly replaced by <mask>";
      selected_words += in > 0;
    }
  }
  // ~100k words: σ of the word rate ≈ 0.0013.
  EXPECT_NEAR(double(selected_words) / words, 0.2, 0.007);
}

}  // namespace
}  // namespace linformer::data

// Word order taken away from masked batches (eval --shuffle-words): the same tokens and targets,
// words kept whole, special tokens in place, words moved only within their sentence.

#include "linformer/data/special_tokens.h"
#include "linformer/data/word_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

namespace linformer::data {
namespace {

constexpr int kVocab = 60, kN = 48;

// Even ordinary ids begin a word, odd ones continue it.
std::vector<uint8_t> word_starts() {
  std::vector<uint8_t> starts(kVocab, 0);
  for (int id = kFirstOrdinaryId; id < kVocab; ++id) starts[static_cast<size_t>(id)] = id % 2 == 0;
  return starts;
}

// A word as it was, as (input id, original id) pairs: how the test recognises it after a move.
using Word = std::vector<std::pair<int32_t, int32_t>>;

// The words of each sentence (run of ordinary ids) of row b, cut at the original ids' word starts.
std::vector<std::vector<Word>> sentences(const Batch& batch, int b) {
  std::map<int64_t, int32_t> original;
  for (size_t m = 0; m < batch.target_positions.size(); ++m) original[batch.target_positions[m]] = batch.target_ids[m];
  std::vector<std::vector<Word>> out;
  bool in_sentence = false;
  for (int t = 0; t < batch.lengths[static_cast<size_t>(b)]; ++t) {
    const int64_t flat = static_cast<int64_t>(b) * batch.seq_len + t;
    const int32_t input = batch.input[static_cast<size_t>(flat)];
    const int32_t id = original.count(flat) ? original[flat] : input;
    if (id < kFirstOrdinaryId) {
      in_sentence = false;
      continue;
    }
    if (!in_sentence) out.emplace_back();
    if (!in_sentence || id % 2 == 0) out.back().emplace_back();
    out.back().back().emplace_back(input, id);
    in_sentence = true;
  }
  return out;
}

// Two rows: <s>, a sentence, </s>, a second sentence, <pad>.
// Every fifth token is a target, shown as <mask>, one target replaced by another ordinary id.
Batch make_batch() {
  Batch batch;
  batch.rows = 2;
  batch.seq_len = kN;
  batch.input.assign(2 * kN, kPadId);
  batch.lengths = {kN, kN - 7};
  batch.block_ids = {11, 12};
  for (int b = 0; b < 2; ++b) {
    int32_t* row = batch.input.data() + b * kN;
    row[0] = kBosId;
    for (int t = 1; t < batch.lengths[static_cast<size_t>(b)]; ++t) {
      row[t] = t == 20 ? kEosId : kFirstOrdinaryId + (t * 7 + b * 3) % (kVocab - kFirstOrdinaryId);
      // Sentences begin with a word (a continuation there would join the word before it once moved).
      if ((t == 1 || t == 21) && row[t] % 2 == 1) --row[t];
      if (t % 5 == 0 && row[t] != kEosId) {
        batch.target_positions.push_back(b * kN + t);
        batch.target_ids.push_back(row[t]);
        // A replacement with an even id where the original continues a word: the boundary
        // must be judged on the original.
        row[t] = t == 25 ? 10 : kMaskId;
      }
    }
  }
  return batch;
}

TEST(WordOrder, KeepsEveryWordTargetAndSpecialTokenAndMovesWordsWithinTheirSentence) {
  const Batch before = make_batch();
  Batch after = before;
  shuffle_words(after, word_starts(), 7);
  ASSERT_EQ(after.target_positions.size(), before.target_positions.size());
  EXPECT_TRUE(std::is_sorted(after.target_positions.begin(), after.target_positions.end()));
  for (int b = 0; b < 2; ++b) {
    for (int t = 0; t < kN; ++t) {
      const int32_t id = before.input[static_cast<size_t>(b * kN + t)];
      if (id < kFirstOrdinaryId && id != kMaskId) {
        EXPECT_EQ(after.input[static_cast<size_t>(b * kN + t)], id) << "row " << b << ", special token at " << t;
      }
    }
    auto was = sentences(before, b), is = sentences(after, b);
    ASSERT_EQ(is.size(), was.size()) << "row " << b;
    for (size_t s = 0; s < was.size(); ++s) {
      EXPECT_NE(is[s], was[s]) << "row " << b << ", sentence " << s << " kept its order";
      std::sort(was[s].begin(), was[s].end());
      std::sort(is[s].begin(), is[s].end());
      EXPECT_EQ(is[s], was[s]) << "row " << b << ", sentence " << s << ": not the same words";
    }
  }
}

TEST(WordOrder, AContinuationThatBeginsASentenceMovesAsAWordOfItsOwn) {
  Batch batch;
  batch.rows = 1;
  batch.seq_len = 8;
  batch.lengths = {8};
  batch.block_ids = {0};
  batch.input = {kBosId, 7, 8, 9, 10, 11, 12, 13};  // a block cut mid-word: 7 continues a word before it
  const std::vector<int32_t> before = batch.input;
  for (uint64_t seed = 0;; ++seed) {
    Batch shuffled = batch;
    shuffle_words(shuffled, word_starts(), seed);
    std::vector<int32_t> sorted = shuffled.input, sorted_before = before;
    std::sort(sorted.begin(), sorted.end());
    std::sort(sorted_before.begin(), sorted_before.end());
    ASSERT_EQ(sorted, sorted_before);
    const auto at = std::find(shuffled.input.begin(), shuffled.input.end(), 7);
    if (at != shuffled.input.begin() + 1) {  // moved: a whole word (8 9, 10 11 or 12 13) before it
      EXPECT_EQ(*(at - 1) % 2, 1) << "7 landed inside a word";
      break;
    }
    ASSERT_LT(seed, 100u) << "the leading continuation never moved";
  }
}

TEST(WordOrder, DependsOnlyOnTheSeedAndTheBlock) {
  const Batch before = make_batch();
  Batch a = before, b = before, c = before;
  shuffle_words(a, word_starts(), 7);
  shuffle_words(b, word_starts(), 7);
  shuffle_words(c, word_starts(), 8);
  EXPECT_EQ(a.input, b.input);
  EXPECT_EQ(a.target_positions, b.target_positions);
  EXPECT_NE(a.input, c.input);
  // The second row alone, in a batch of its own: the same permutation.
  Batch single = before;
  single.rows = 1;
  single.input.erase(single.input.begin(), single.input.begin() + kN);
  single.lengths = {before.lengths[1]};
  single.block_ids = {before.block_ids[1]};
  single.target_positions.clear();
  single.target_ids.clear();
  for (size_t m = 0; m < before.target_positions.size(); ++m)
    if (before.target_positions[m] >= kN) {
      single.target_positions.push_back(before.target_positions[m] - kN);
      single.target_ids.push_back(before.target_ids[m]);
    }
  shuffle_words(single, word_starts(), 7);
  EXPECT_TRUE(std::equal(single.input.begin(), single.input.end(), a.input.begin() + kN));
}

TEST(WordOrder, ASentenceOfOneRepeatedWordIsUnchanged) {
  Batch batch;
  batch.rows = 1;
  batch.seq_len = kN;
  batch.lengths = {kN - 1};  // <s> and 23 words
  batch.block_ids = {3};
  batch.input.assign(kN, kPadId);
  batch.input[0] = kBosId;
  for (int t = 1; t < kN - 1; ++t)
    batch.input[static_cast<size_t>(t)] = t % 2 ? 20 : 21;  // the word (20, 21) again and again
  batch.target_positions = {4, 9};
  batch.target_ids = {21, 20};
  batch.input[4] = batch.input[9] = kMaskId;
  const Batch before = batch;
  shuffle_words(batch, word_starts(), 1);
  // The masks move with their words, so the input changes, but not the targets' ids nor the text.
  std::vector<int32_t> text = batch.input, text_before = before.input;
  for (size_t m = 0; m < 2; ++m) {
    text[static_cast<size_t>(batch.target_positions[m])] = batch.target_ids[m];
    text_before[static_cast<size_t>(before.target_positions[m])] = before.target_ids[m];
  }
  EXPECT_EQ(text, text_before);
  EXPECT_EQ(batch.target_ids.size(), 2u);
}

}  // namespace
}  // namespace linformer::data

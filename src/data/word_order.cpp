#include "linformer/data/word_order.h"

#include "linformer/core/check.h"
#include "linformer/core/rng.h"
#include "linformer/data/special_tokens.h"

#include <algorithm>

namespace linformer::data {

namespace {

constexpr uint64_t kWordOrderStream = 0x574F52444F524452ull;  // "WORDORDR"

// One token of a row as it moves: its input id, and its original id when it is a target.
struct Token {
  int32_t input;
  int32_t original;
  bool target;
};

}  // namespace

void shuffle_words(Batch& batch, const std::vector<uint8_t>& word_starts, uint64_t seed) {
  const int64_t n = batch.seq_len;
  LF_CHECK(static_cast<int64_t>(batch.block_ids.size()) == batch.rows, "shuffle_words: {} block ids for {} rows",
           batch.block_ids.size(), batch.rows);
  std::vector<Token> row;              // (n) the row's tokens, original ids restored
  std::vector<int> word_begin, order;  // words of one segment: [word_begin[w], word_begin[w + 1])
  std::vector<Token> shuffled;         // one segment rearranged
  std::vector<int64_t> positions;      // (M) the new targets' flat positions, increasing
  std::vector<int32_t> targets;        // (M) their original ids
  size_t next_target = 0;
  for (int b = 0; b < batch.rows; ++b) {
    const int length = batch.lengths[static_cast<size_t>(b)];
    int32_t* input = batch.input.data() + b * n;
    row.resize(static_cast<size_t>(length));
    for (int t = 0; t < length; ++t) row[static_cast<size_t>(t)] = {input[t], input[t], false};
    for (; next_target < batch.target_positions.size() && batch.target_positions[next_target] < (b + 1) * n;
         ++next_target) {
      auto& token = row[static_cast<size_t>(batch.target_positions[next_target] - b * n)];
      token.original = batch.target_ids[next_target];
      token.target = true;
    }
    Rng rng(seed, stream_id({kWordOrderStream, static_cast<uint64_t>(batch.block_ids[static_cast<size_t>(b)])}));
    // Segments: maximal runs of ordinary tokens between special ones.
    for (int begin = 0; begin < length;) {
      if (row[static_cast<size_t>(begin)].original < kFirstOrdinaryId) {
        ++begin;
        continue;
      }
      int end = begin;
      word_begin.clear();
      for (; end < length && row[static_cast<size_t>(end)].original >= kFirstOrdinaryId; ++end)
        if (end == begin || word_starts[static_cast<size_t>(row[static_cast<size_t>(end)].original)])
          word_begin.push_back(end);
      const int words = static_cast<int>(word_begin.size());
      word_begin.push_back(end);
      order.resize(static_cast<size_t>(words));
      for (int w = 0; w < words; ++w) order[static_cast<size_t>(w)] = w;
      for (int i = words - 1; i > 0; --i)  // Fisher-Yates
        std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(rng.below(static_cast<uint64_t>(i) + 1))]);
      shuffled.clear();
      for (int w : order)
        shuffled.insert(shuffled.end(), row.begin() + word_begin[static_cast<size_t>(w)],
                        row.begin() + word_begin[static_cast<size_t>(w) + 1]);
      std::copy(shuffled.begin(), shuffled.end(), row.begin() + begin);
      begin = end;
    }
    for (int t = 0; t < length; ++t) {
      const Token& token = row[static_cast<size_t>(t)];
      input[t] = token.input;
      if (token.target) {
        positions.push_back(b * n + t);
        targets.push_back(token.original);
      }
    }
  }
  LF_CHECK(positions.size() == batch.target_positions.size(), "shuffle_words: {} targets became {}",
           batch.target_positions.size(), positions.size());
  batch.target_positions = std::move(positions);
  batch.target_ids = std::move(targets);
}

}  // namespace linformer::data

// Blocks like fairseq's TokenBlockDataset, for every break mode.

#include "linformer/core/rng.h"
#include "linformer/data/blocks.h"
#include "linformer/data/shard.h"
#include "linformer/data/special_tokens.h"
#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace linformer::data {
namespace {

using config::BreakMode;

std::vector<std::pair<uint64_t, uint32_t>> pairs(const std::vector<Block>& blocks) {
  std::vector<std::pair<uint64_t, uint32_t>> out;
  for (const auto& b : blocks) out.emplace_back(b.begin, b.length);
  return out;
}

// Documents A = sentences of 3, 4 tokens; B = 2, 6, 1; C = 9. n = 7: 6 tokens after <s>.
const std::vector<uint64_t> kSentenceEnds = {3, 7, 9, 15, 16, 25};
const std::vector<uint64_t> kDocumentEnds = {7, 16, 25};

std::vector<std::pair<uint64_t, uint32_t>> cut(BreakMode mode) {
  return pairs(cut_blocks(25, kSentenceEnds, kDocumentEnds, 7, mode));
}

using P = std::pair<uint64_t, uint32_t>;

TEST(Blocks, NoneCutsFixedWindows) {
  EXPECT_THAT(cut(BreakMode::none), ::testing::ElementsAre(P{0, 6}, P{6, 6}, P{12, 6}, P{18, 6}, P{24, 1}));
}

TEST(Blocks, EosIsOneSentencePerBlockWithLongOnesInWindows) {
  EXPECT_THAT(cut(BreakMode::eos),
              ::testing::ElementsAre(P{0, 3}, P{3, 4}, P{7, 2}, P{9, 6}, P{15, 1}, P{16, 6}, P{22, 3}));
}

TEST(Blocks, CompletePacksWholeSentencesAcrossDocuments) {
  // [3] + [4] > 6; [4] + [2] = 6 fits (across A|B); + [6] does not; [6] alone; [1] then the
  // 9-token sentence: [1] alone, a window of 6, and its last 3 tokens.
  EXPECT_THAT(cut(BreakMode::complete),
              ::testing::ElementsAre(P{0, 3}, P{3, 6}, P{9, 6}, P{15, 1}, P{16, 6}, P{22, 3}));
}

TEST(Blocks, CompleteDocNeverCrossesADocument) {
  EXPECT_THAT(cut(BreakMode::complete_doc),
              ::testing::ElementsAre(P{0, 3}, P{3, 4}, P{7, 2}, P{9, 6}, P{15, 1}, P{16, 6}, P{22, 3}));
  // Short sentences are packed within a document.
  EXPECT_THAT(pairs(cut_blocks(10, {2, 4, 6, 8, 10}, {6, 10}, 7, BreakMode::complete_doc)),
              ::testing::ElementsAre(P{0, 6}, P{6, 4}));
}

// Properties on random streams: blocks tile the stream in order, fit in n - 1, and
// break only where the mode allows.
TEST(Blocks, RandomStreamsTileAndRespectBoundaries) {
  Rng rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint64_t> sentence_ends, document_ends;
    uint64_t t = 0;
    for (uint64_t d = 0, docs = 1 + rng.below(6); d < docs; ++d) {
      for (uint64_t s = 0, n = 1 + rng.below(5); s < n; ++s) sentence_ends.push_back(t += 1 + rng.below(20));
      document_ends.push_back(t);
    }
    const int n = 2 + static_cast<int>(rng.below(15));
    for (BreakMode mode : {BreakMode::none, BreakMode::complete, BreakMode::complete_doc, BreakMode::eos}) {
      const auto blocks = cut_blocks(t, sentence_ends, document_ends, n, mode);
      uint64_t next = 0;
      for (const Block& b : blocks) {
        ASSERT_EQ(b.begin, next) << "trial " << trial;
        ASSERT_GE(b.length, 1u);
        ASSERT_LE(b.length, static_cast<uint32_t>(n - 1));
        next = b.begin + b.length;
        const auto crosses = [&](const std::vector<uint64_t>& ends) {
          for (uint64_t e : ends)
            if (b.begin < e && e < b.begin + b.length) return true;
          return false;
        };
        if (mode == BreakMode::eos) {
          EXPECT_FALSE(crosses(sentence_ends)) << "trial " << trial;
        }
        if (mode == BreakMode::complete_doc) {
          EXPECT_FALSE(crosses(document_ends)) << "trial " << trial;
        }
      }
      ASSERT_EQ(next, t) << "trial " << trial << ": the blocks do not cover the stream";
      if (mode == BreakMode::none) {
        EXPECT_EQ(blocks.size(), (t + n - 2) / (n - 1));
      }
    }
  }
}

TEST(Blocks, RowsArePrefixedAndPadded) {
  testing::TempDir dir;
  const std::string path = (dir.path() / "s.bin").string();
  {
    ShardWriter w(path, 100, 0);
    w.add_document({10, 11, kEosId, 12, kEosId});
    w.add_document({13, 14, 15, kEosId});
    w.finish();
  }
  const Shard shard = Shard::open(path);
  const TokenBlocks blocks(shard, 6, BreakMode::complete_doc);
  ASSERT_EQ(blocks.size(), 2);
  std::vector<int32_t> row(6, -1);
  EXPECT_EQ(blocks.fill_row(0, row.data()), 6);
  EXPECT_THAT(row, ::testing::ElementsAre(kBosId, 10, 11, kEosId, 12, kEosId));
  EXPECT_EQ(blocks.fill_row(1, row.data()), 5);
  EXPECT_THAT(row, ::testing::ElementsAre(kBosId, 13, 14, 15, kEosId, kPadId));
  const TokenBlocks eos(shard, 6, BreakMode::eos);
  EXPECT_EQ(eos.size(), 3);
}

}  // namespace
}  // namespace linformer::data

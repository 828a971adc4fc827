// Batcher: epochs, resume without replay, rank sharding, masks independent of batching and threads.

#include "linformer/core/check.h"
#include "linformer/core/rng.h"
#include "linformer/data/batcher.h"
#include "linformer/data/shard.h"
#include "linformer/data/special_tokens.h"
#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <map>
#include <set>

namespace linformer::data {
namespace {

constexpr int kVocab = 300, kN = 16;

// A shard of 30 documents of 2-5 sentences of 3-9 tokens each.
class BatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = (dir_.path() / "train.bin").string();
    ShardWriter w(path, kVocab, 0);
    Rng rng(2);
    for (int d = 0; d < 30; ++d) {
      std::vector<int32_t> doc;
      for (uint64_t s = 0, n = 2 + rng.below(4); s < n; ++s) {
        for (uint64_t t = 0, len = 2 + rng.below(8); t < len; ++t)
          doc.push_back(kFirstOrdinaryId + static_cast<int32_t>(rng.below(kVocab - 5)));
        doc.push_back(kEosId);
      }
      w.add_document(doc);
    }
    w.finish();
    shard_ = std::make_unique<Shard>(Shard::open(path));
    blocks_ = std::make_unique<TokenBlocks>(*shard_, kN, config::BreakMode::complete);
    config::MaskingConfig m;
    m.probability = 0.3;
    m.mask_fraction = 0.8;
    m.random_fraction = 0.1;
    m.whole_word = false;
    masker_ = std::make_unique<Masker>(m, kVocab, std::vector<uint8_t>{}, 7);
  }

  BatcherOptions options(int batch_size = 4) const {
    BatcherOptions o;
    o.batch_size = batch_size;
    o.seed = 11;
    return o;
  }

  // Per block: its masked row and its targets as (position in row, id).
  struct Row {
    std::vector<int32_t> input;
    std::vector<std::pair<int, int32_t>> targets;
    bool operator==(const Row& o) const { return input == o.input && targets == o.targets; }
  };
  static std::map<int64_t, Row> rows_of(const Batch& b) {
    std::map<int64_t, Row> rows;
    for (int r = 0; r < b.rows; ++r) {
      Row& row = rows[b.block_ids[r]];
      row.input.assign(b.input.begin() + r * b.seq_len, b.input.begin() + (r + 1) * b.seq_len);
    }
    for (size_t i = 0; i < b.target_positions.size(); ++i) {
      const int r = static_cast<int>(b.target_positions[i] / b.seq_len);
      rows[b.block_ids[r]].targets.emplace_back(static_cast<int>(b.target_positions[i] % b.seq_len), b.target_ids[i]);
    }
    return rows;
  }

  testing::TempDir dir_;
  std::unique_ptr<Shard> shard_;
  std::unique_ptr<TokenBlocks> blocks_;
  std::unique_ptr<Masker> masker_;
};

TEST_F(BatcherTest, BatchContentsAreConsistent) {
  Batcher batcher(*blocks_, *masker_, options());
  Batch b;
  batcher.next(b);
  ASSERT_EQ(b.rows, 4);
  ASSERT_EQ(b.seq_len, kN);
  EXPECT_EQ(b.input_view().shape(), (Shape{4, kN}));
  EXPECT_GT(b.targets(), 0);
  for (int r = 0; r < b.rows; ++r) {
    std::vector<int32_t> original(kN);
    ASSERT_EQ(blocks_->fill_row(b.block_ids[r], original.data()), b.lengths[r]);
    EXPECT_EQ(b.input[r * kN], kBosId);
    for (int t = 0; t < kN; ++t) {
      if (t >= b.lengths[r]) {
        EXPECT_EQ(b.input[r * kN + t], kPadId);
      }
    }
  }
  for (size_t i = 0; i < b.target_positions.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(b.target_positions[i - 1], b.target_positions[i]);
    }
    const int64_t p = b.target_positions[i];
    std::vector<int32_t> original(kN);
    blocks_->fill_row(b.block_ids[p / kN], original.data());
    EXPECT_EQ(b.target_ids[i], original[p % kN]);
    EXPECT_LT(p % kN, b.lengths[p / kN]);
  }
}

TEST_F(BatcherTest, EachEpochVisitsEveryBlockOnceInANewOrder) {
  BatcherOptions o = options();
  o.drop_last = false;
  Batcher batcher(*blocks_, *masker_, o);
  EXPECT_EQ(batcher.batches_per_epoch(), (blocks_->size() + 3) / 4);
  std::vector<std::vector<int64_t>> orders(3);
  Batch b;
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (int64_t i = 0; i < batcher.batches_per_epoch(); ++i) {
      ASSERT_EQ(batcher.state(), (BatcherState{static_cast<uint64_t>(epoch), static_cast<uint64_t>(i)}));
      batcher.next(b);
      orders[epoch].insert(orders[epoch].end(), b.block_ids.begin(), b.block_ids.end());
    }
    std::set<int64_t> distinct(orders[epoch].begin(), orders[epoch].end());
    EXPECT_EQ(static_cast<int64_t>(distinct.size()), blocks_->size());
    EXPECT_EQ(static_cast<int64_t>(orders[epoch].size()), blocks_->size());
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
}

TEST_F(BatcherTest, ResumingFromAStateGivesTheSameBatches) {
  Batcher uninterrupted(*blocks_, *masker_, options());
  std::vector<Batch> expected(2 * uninterrupted.batches_per_epoch() + 3);
  for (auto& b : expected) uninterrupted.next(b);

  // "Checkpoint" after 5 batches: a new batcher continues from the saved state alone.
  Batcher first(*blocks_, *masker_, options());
  Batch b;
  for (int i = 0; i < 5; ++i) first.next(b);
  const BatcherState saved = first.state();
  Batcher resumed(*blocks_, *masker_, options());
  resumed.set_state(saved);
  for (size_t i = 5; i < expected.size(); ++i) {
    resumed.next(b);
    ASSERT_EQ(b.block_ids, expected[i].block_ids) << "batch " << i;
    ASSERT_EQ(b.input, expected[i].input) << "batch " << i;
    ASSERT_EQ(b.target_positions, expected[i].target_positions) << "batch " << i;
    ASSERT_EQ(b.target_ids, expected[i].target_ids) << "batch " << i;
  }
  EXPECT_THROW(resumed.set_state({0, static_cast<uint64_t>(resumed.batches_per_epoch())}), Error);
}

TEST_F(BatcherTest, MasksDoNotDependOnBatchSizeOrThreads) {
  std::map<int64_t, Row> by_four, by_seven;
  for (int size : {4, 7}) {
    BatcherOptions o = options(size);
    o.drop_last = false;
    Batcher batcher(*blocks_, *masker_, o);
    Batch b;
    for (int64_t i = 0; i < batcher.batches_per_epoch(); ++i) {
      batcher.next(b);
      for (auto& [block, row] : rows_of(b)) (size == 4 ? by_four : by_seven)[block] = row;
    }
  }
  EXPECT_EQ(by_four.size(), static_cast<size_t>(blocks_->size()));
  EXPECT_TRUE(by_four == by_seven) << "a block's mask changed with the batch it was in";

  const int threads = omp_get_max_threads();
  Batch one, two;
  omp_set_num_threads(1);
  Batcher(*blocks_, *masker_, options(8)).get({1, 2}, one);
  omp_set_num_threads(2);
  Batcher(*blocks_, *masker_, options(8)).get({1, 2}, two);
  omp_set_num_threads(threads);
  EXPECT_EQ(one.input, two.input);
  EXPECT_EQ(one.target_positions, two.target_positions);
}

TEST_F(BatcherTest, DynamicMasksChangeEachEpochFixedMasksDoNot) {
  BatcherOptions o = options();
  o.shuffle = false;
  Batch e0, e1;
  Batcher dynamic(*blocks_, *masker_, o);
  dynamic.get({0, 0}, e0);
  dynamic.get({1, 0}, e1);
  EXPECT_EQ(e0.block_ids, e1.block_ids);  // no shuffling: same blocks
  EXPECT_NE(e0.target_positions, e1.target_positions);
  o.fixed_mask = true;
  Batcher fixed(*blocks_, *masker_, o);
  fixed.get({0, 0}, e0);
  fixed.get({5, 0}, e1);
  EXPECT_EQ(e0.input, e1.input);
  EXPECT_EQ(e0.target_positions, e1.target_positions);
  EXPECT_THAT(e0.block_ids, ::testing::ElementsAre(0, 1, 2, 3));
}

TEST_F(BatcherTest, RanksSeeDisjointBlocks) {
  const int world = 3;
  for (uint64_t epoch : {0, 1}) {
    std::set<int64_t> seen;
    int64_t total = 0, batches = -1;
    for (int rank = 0; rank < world; ++rank) {
      BatcherOptions o = options(2);
      o.rank = rank;
      o.world_size = world;
      o.drop_last = false;
      Batcher batcher(*blocks_, *masker_, o);
      if (batches >= 0) {
        EXPECT_EQ(batcher.batches_per_epoch(), batches) << "ranks must agree on the batch count";
      }
      batches = batcher.batches_per_epoch();
      batcher.set_state({epoch, 0});
      Batch b;
      for (int64_t i = 0; i < batcher.batches_per_epoch(); ++i) {
        batcher.next(b);
        for (int64_t block : b.block_ids) {
          EXPECT_TRUE(seen.insert(block).second) << "block " << block << " seen by two ranks";
          ++total;
        }
      }
    }
    EXPECT_EQ(total, blocks_->size() / world * world);
  }
}

TEST_F(BatcherTest, TooFewBlocksForOneBatchIsAnError) {
  EXPECT_THROW(Batcher(*blocks_, *masker_, options(static_cast<int>(blocks_->size()) + 1)), Error);
}

}  // namespace
}  // namespace linformer::data

#pragma once
// Batches of masked blocks for training and validation.
//
// Each epoch visits the blocks in an order that is a permutation seeded by
// (seed, epoch) (or the identity without shuffling). The whole state is
// BatcherState{epoch, position}: batch `position` of `epoch` is computed directly,
// so resuming from a checkpoint jumps to the next batch without replaying any.
//
// Data parallelism: with world_size R, each epoch uses the first ⌊N/R⌋·R entries
// of the permutation and rank r takes entries r, r + R, r + 2R, …: ranks see
// disjoint blocks and the same number of batches.
//
// Masks: row i of a batch is masked with Masker::mask_row(epoch, block index), so
// a block gets new masks every epoch (dynamic masking). With fixed_mask (validation)
// the epoch passed to the masker is a constant: the same positions every time. With
// stream_mask (eval --same-targets) each token's mask follows its place in the split's
// token stream instead, so blocks of any length mask the same tokens.

#include "linformer/core/tensor.h"
#include "linformer/data/blocks.h"
#include "linformer/data/masking.h"

#include <cstdint>
#include <vector>

namespace linformer::data {

struct BatcherState {
  uint64_t epoch = 0;
  uint64_t position = 0;  // the next batch within the epoch, for this rank
  bool operator==(const BatcherState& o) const { return epoch == o.epoch && position == o.position; }
};

struct BatcherOptions {
  int batch_size = 8;        // B
  uint64_t seed = 1;         // shuffling (masking has its seed in the Masker)
  bool shuffle = true;       // false: blocks in shard order (validation)
  bool fixed_mask = false;   // true: the same masks every epoch (validation)
  bool drop_last = true;     // false: the last batch of an epoch may have fewer than B rows
  bool stream_mask = false;  // true: masks by each token's place in the stream (Masker::mask_row_by_stream),
                             // the same targets at every n; implies fixed masks
  int rank = 0;              // r
  int world_size = 1;        // R
};

// Options for evaluation: blocks in shard order, the same masks every time, every block.
BatcherOptions evaluation_options(int batch_size, uint64_t seed);

// One batch. Axes: B rows (≤ batch_size), n = seq_len.
struct Batch {
  int rows = 0;                           // B
  int seq_len = 0;                        // n
  std::vector<int32_t> input;             // (B, n) ids after masking; <s> first, <pad> after each row's length
  std::vector<int32_t> lengths;           // (B) tokens per row, <s> included
  std::vector<int64_t> target_positions;  // (M) flat index b·n + t of each prediction target, increasing
  std::vector<int32_t> target_ids;        // (M) the original id at that position
  std::vector<int64_t> block_ids;         // (B) the block of each row (the masking's sample index)
  BatcherState state;                     // which batch this is

  TensorView<const int32_t> input_view() const { return {input.data(), Shape{rows, seq_len}}; }
  int64_t targets() const { return static_cast<int64_t>(target_ids.size()); }  // M
};

class Batcher {
 public:
  // Keeps references to blocks and masker: they must outlive the batcher.
  Batcher(const TokenBlocks& blocks, const Masker& masker, BatcherOptions options);

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  int64_t blocks_per_rank() const { return blocks_per_rank_; }

  const BatcherState& state() const { return state_; }
  void set_state(const BatcherState& state);

  // The batch at state(), then advances state() (to batch 0 of the next epoch after the last one).
  void next(Batch& batch);
  // The batch at `at`, without touching state().
  void get(const BatcherState& at, Batch& batch);

 private:
  const std::vector<int64_t>& order(uint64_t epoch);  // the epoch's permutation of block indices

  const TokenBlocks& blocks_;
  const Masker& masker_;
  BatcherOptions options_;
  int64_t blocks_per_rank_ = 0, batches_per_epoch_ = 0;
  BatcherState state_;
  uint64_t order_epoch_ = UINT64_MAX;
  std::vector<int64_t> order_;
};

}  // namespace linformer::data

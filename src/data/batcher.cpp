#include "linformer/data/batcher.h"

#include "linformer/core/check.h"
#include "linformer/core/rng.h"
#include "linformer/data/special_tokens.h"

#include <algorithm>

namespace linformer::data {

namespace {
constexpr uint64_t kShuffleStream = 0x53485546464C45ull;  // "SHUFFLE"
constexpr uint64_t kFixedMaskEpoch = ~0ull;               // never a real epoch
}  // namespace

BatcherOptions evaluation_options(int batch_size, uint64_t seed) {
  BatcherOptions o;
  o.batch_size = batch_size;
  o.seed = seed;
  o.shuffle = false;
  o.fixed_mask = true;
  o.drop_last = false;
  return o;
}

Batcher::Batcher(const TokenBlocks& blocks, const Masker& masker, BatcherOptions options)
    : blocks_(blocks), masker_(masker), options_(options) {
  LF_CHECK(options.batch_size >= 1, "batch size {} must be positive", options.batch_size);
  LF_CHECK(options.world_size >= 1 && options.rank >= 0 && options.rank < options.world_size, "rank {} outside [0, {})",
           options.rank, options.world_size);
  blocks_per_rank_ = blocks.size() / options.world_size;
  const int64_t b = options.batch_size;
  batches_per_epoch_ = options.drop_last ? blocks_per_rank_ / b : (blocks_per_rank_ + b - 1) / b;
  LF_CHECK(batches_per_epoch_ > 0,
           "{} blocks of {} tokens give rank {} of {} no batch of {} (use a smaller batch size or seq_len, or more "
           "data)",
           blocks.size(), blocks.seq_len(), options.rank, options.world_size, options.batch_size);
}

void Batcher::set_state(const BatcherState& state) {
  LF_CHECK(state.position < static_cast<uint64_t>(batches_per_epoch_),
           "batch {} of an epoch of {} batches: the data or batch size changed since the state was saved",
           state.position, batches_per_epoch_);
  state_ = state;
}

const std::vector<int64_t>& Batcher::order(uint64_t epoch) {
  if (order_epoch_ == epoch) return order_;
  order_.resize(static_cast<size_t>(blocks_.size()));
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int64_t>(i);
  if (options_.shuffle) {
    Rng rng(options_.seed, stream_id({kShuffleStream, epoch}));
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);
  }
  order_epoch_ = epoch;
  return order_;
}

void Batcher::next(Batch& batch) {
  get(state_, batch);
  if (++state_.position == static_cast<uint64_t>(batches_per_epoch_)) {
    ++state_.epoch;
    state_.position = 0;
  }
}

void Batcher::get(const BatcherState& at, Batch& batch) {
  LF_CHECK(at.position < static_cast<uint64_t>(batches_per_epoch_), "batch {} of an epoch of {} batches", at.position,
           batches_per_epoch_);
  const std::vector<int64_t>& perm = order(at.epoch);
  const int64_t first = static_cast<int64_t>(at.position) * options_.batch_size;  // within this rank's share
  const int rows = static_cast<int>(std::min<int64_t>(options_.batch_size, blocks_per_rank_ - first));
  const int n = blocks_.seq_len();
  const uint64_t mask_epoch = options_.fixed_mask ? kFixedMaskEpoch : at.epoch;

  batch.rows = rows;
  batch.seq_len = n;
  batch.state = at;
  batch.input.resize(static_cast<size_t>(rows) * n);
  batch.lengths.resize(static_cast<size_t>(rows));
  batch.block_ids.resize(static_cast<size_t>(rows));
  batch.target_positions.clear();
  batch.target_ids.clear();

  // Rows are independent (their masks depend only on epoch and block), so they are
  // filled in parallel and their targets concatenated in row order.
  std::vector<std::vector<int64_t>> positions(static_cast<size_t>(rows));
  std::vector<std::vector<int32_t>> targets(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static)
  for (int r = 0; r < rows; ++r) {
    const int64_t k = first + r;  // this rank's k-th block of the epoch
    const int64_t block = perm[static_cast<size_t>(k * options_.world_size + options_.rank)];
    int32_t* row = batch.input.data() + static_cast<size_t>(r) * n;
    const int length = blocks_.fill_row(block, row);
    batch.lengths[static_cast<size_t>(r)] = length;
    batch.block_ids[static_cast<size_t>(r)] = block;
    if (options_.stream_mask)
      masker_.mask_row_by_stream(row, length, blocks_.block(block).begin, static_cast<int64_t>(r) * n,
                                 positions[static_cast<size_t>(r)], targets[static_cast<size_t>(r)]);
    else
      masker_.mask_row(row, length, mask_epoch, static_cast<uint64_t>(block), static_cast<int64_t>(r) * n,
                       positions[static_cast<size_t>(r)], targets[static_cast<size_t>(r)]);
  }
  for (int r = 0; r < rows; ++r) {
    batch.target_positions.insert(batch.target_positions.end(), positions[static_cast<size_t>(r)].begin(),
                                  positions[static_cast<size_t>(r)].end());
    batch.target_ids.insert(batch.target_ids.end(), targets[static_cast<size_t>(r)].begin(),
                            targets[static_cast<size_t>(r)].end());
  }
}

}  // namespace linformer::data

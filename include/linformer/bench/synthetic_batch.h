#pragma once
// The benchmarks' input: B full rows of n tokens, <s> then random ordinary ids; masked
// positions drawn with probability mask_probability after <s>, or, when it is 0, the
// middle position of each row (one per sequence: the MLM head is then negligible).

#include "linformer/model/mlm_model.h"

#include <cstdint>
#include <vector>

namespace linformer {

struct SyntheticBatch {
  SyntheticBatch(int64_t B, int64_t n, int vocab_size, uint64_t seed, double mask_probability);
  MlmBatchView view() const;
  int64_t masked() const { return static_cast<int64_t>(positions.size()); }

  int64_t B, n;
  std::vector<int32_t> ids, lengths, positions, targets;  // (B, n), (B), (M), (M)
};

}  // namespace linformer

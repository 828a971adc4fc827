#pragma once
// A data::Batch as the model reads it.

#include "linformer/data/batcher.h"
#include "linformer/model/mlm_model.h"

#include <vector>

namespace linformer {

// The view keeps pointers into `batch` and `positions` (int32 copies of the target positions).
MlmBatchView model_view(const data::Batch& batch, std::vector<int32_t>& positions);

// The most masked positions a batch can hold with this masking: selected units are
// floor(p·m + u) ≤ p·m + 1 per row; whole words can be any length, so then every token.
int64_t max_masked_per_batch(const config::MaskingConfig& masking, int64_t batch_size, int64_t seq_len);

}  // namespace linformer

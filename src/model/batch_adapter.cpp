#include "linformer/model/batch_adapter.h"

#include <cmath>

namespace linformer {

MlmBatchView model_view(const data::Batch& batch, std::vector<int32_t>& positions) {
  positions.assign(batch.target_positions.begin(), batch.target_positions.end());
  return {batch.rows,      batch.seq_len,    batch.input.data(),     batch.lengths.data(),
          batch.targets(), positions.data(), batch.target_ids.data()};
}

int64_t max_masked_per_batch(const config::MaskingConfig& masking, int64_t batch_size, int64_t seq_len) {
  if (masking.whole_word) return batch_size * seq_len;
  const int64_t per_row = static_cast<int64_t>(std::ceil(masking.probability * static_cast<double>(seq_len))) + 1;
  return batch_size * std::min(per_row, seq_len);
}

}  // namespace linformer

#include "linformer/bench/synthetic_batch.h"

#include "linformer/core/rng.h"
#include "linformer/data/special_tokens.h"

namespace linformer {

SyntheticBatch::SyntheticBatch(int64_t B_, int64_t n_, int vocab_size, uint64_t seed, double mask_probability)
    : B(B_), n(n_), ids(static_cast<size_t>(B_ * n_)), lengths(static_cast<size_t>(B_), static_cast<int32_t>(n_)) {
  using data::kBosId, data::kFirstOrdinaryId;
  Rng rng(seed);
  for (int64_t i = 0; i < B * n; ++i) {
    ids[i] = i % n == 0 ? kBosId : kFirstOrdinaryId + static_cast<int32_t>(rng.below(vocab_size - kFirstOrdinaryId));
    if (mask_probability > 0 && i % n != 0 && rng.uniform() < mask_probability) {
      positions.push_back(static_cast<int32_t>(i));
      targets.push_back(ids[i]);
    }
  }
  if (mask_probability > 0) return;
  for (int64_t b = 0; b < B; ++b) {
    positions.push_back(static_cast<int32_t>(b * n + n / 2));
    targets.push_back(ids[b * n + n / 2]);
  }
}

MlmBatchView SyntheticBatch::view() const {
  return {B, n, ids.data(), lengths.data(), masked(), positions.data(), targets.data()};
}

}  // namespace linformer

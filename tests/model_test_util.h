#pragma once
// Tiny models and random batches for the model tests.

#include "linformer/core/rng.h"
#include "linformer/model/mlm_model.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace linformer::testing {

// A tiny model: L = 2, C = 16, H = 2, F = 32, n = 16, V = 40; `changes` overrides any field.
inline ModelSpec tiny_spec(const nlohmann::json& changes = {}) {
  nlohmann::json j = {{"layers", 2},
                      {"d_model", 16},
                      {"heads", 2},
                      {"ffn_dim", 32},
                      {"seq_len", 16},
                      {"vocab_size", 40},
                      {"norm", "post"},
                      {"layer_norm_eps", 1e-5},
                      {"init_std", 0.2},
                      {"attention", "linformer"},
                      {"k_per_layer", {4, 4}},
                      {"sharing", "headwise"},
                      {"projection", "linear"},
                      {"freeze_projection", false},
                      {"projection_init", "normal"},
                      {"dropout", 0.0},
                      {"attention_dropout", 0.0},
                      {"activation_dropout", 0.0}};
  if (changes.is_object()) j.update(changes);
  return j.get<ModelSpec>();
}

// An owning batch: random ordinary ids (≥ 5) after <s>, <pad> beyond each length, and
// about 15% of the real non-<s> positions masked (at least one per row).
struct OwnedBatch {
  int64_t B = 0, T = 0;
  std::vector<int32_t> ids, lengths, masked_positions, targets;

  MlmBatchView view() const {
    return {B,
            T,
            ids.data(),
            lengths.data(),
            static_cast<int64_t>(masked_positions.size()),
            masked_positions.data(),
            targets.data()};
  }
};

inline OwnedBatch random_batch(int64_t T, const std::vector<int32_t>& lengths, int vocab, uint64_t seed) {
  OwnedBatch b;
  b.B = static_cast<int64_t>(lengths.size());
  b.T = T;
  b.lengths = lengths;
  b.ids.assign(static_cast<size_t>(b.B * T), 0);
  Rng rng(seed);
  for (int64_t r = 0; r < b.B; ++r) {
    b.ids[r * T] = 1;
    for (int64_t t = 1; t < lengths[r]; ++t) b.ids[r * T + t] = 5 + static_cast<int32_t>(rng.below(vocab - 5));
    bool any = false;
    for (int64_t t = 1; t < lengths[r]; ++t) {
      if (rng.uniform() < 0.15f || (!any && t == lengths[r] - 1)) {
        b.masked_positions.push_back(static_cast<int32_t>(r * T + t));
        b.targets.push_back(b.ids[r * T + t]);
        b.ids[r * T + t] = 4;  // <mask>
        any = true;
      }
    }
  }
  return b;
}

// The same rows laid out with a different T (more or less padding); masked positions follow.
inline OwnedBatch repad(const OwnedBatch& src, int64_t T) {
  OwnedBatch b = src;
  b.T = T;
  b.ids.assign(static_cast<size_t>(b.B * T), 0);
  for (int64_t r = 0; r < b.B; ++r)
    for (int64_t t = 0; t < src.lengths[r]; ++t) b.ids[r * T + t] = src.ids[r * src.T + t];
  for (auto& p : b.masked_positions) p = static_cast<int32_t>((p / src.T) * T + p % src.T);
  return b;
}

}  // namespace linformer::testing

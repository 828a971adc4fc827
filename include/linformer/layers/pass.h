#pragma once
// What one forward/backward pass needs besides data and weights.
//
// Axis names: B batch, T tokens per row of this batch (T ≤ n), C model width,
// H heads, D = C / H, F feed-forward width, K projected length, V vocabulary,
// M masked positions.

#include "linformer/core/rng.h"

#include <cstdint>

namespace linformer {

struct Pass {
  bool training = false;  // dropout on
  uint64_t seed = 0;      // keys every dropout mask
  uint64_t step = 0;      // which micro-batch: masks differ per step, repeat on replay
};

// Dropout sites, so each gets its own Philox stream per (layer, step).
// Appended sites keep the earlier sites' numbers (and so their masks).
enum class DropoutSite : uint64_t {
  embedding = 1,
  attention_probs,
  attention_out,
  activation,
  ffn_out,
  classifier,
  attention_band_probs,  // the local band's probabilities (model.local_window)
};

inline uint64_t dropout_stream(DropoutSite site, int layer, const Pass& pass) {
  return stream_id({static_cast<uint64_t>(site), static_cast<uint64_t>(layer), pass.step});
}

// The geometry of one batch: B rows of T positions, lengths[b] real tokens in row b.
struct BatchGeometry {
  int64_t B = 0, T = 0;
  const int32_t* lengths = nullptr;  // (B)
  int64_t rows() const { return B * T; }
};

// The rows a block computes its output at, when a pass reads only some: the last block of a
// masked-LM training step, whose output the loss reads at the masked tokens alone. Keys and values
// still come from every token; queries, the residual, LayerNorms and the feed-forward run on Tq rows
// per sequence: its selected tokens, then copies of its first token (never read, zero gradient).
struct QueryRows {
  int64_t Tq = 0;                   // rows per sequence, ≤ T
  const int32_t* source = nullptr;  // (B·Tq) flat b·T + t of each row
};

}  // namespace linformer

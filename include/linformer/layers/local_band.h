#pragma once
// The local band of a Linformer layer with model.local_window = w: beside its K compressed keys,
// query i also attends at full resolution to keys j with |i − j| ≤ w (and j a real token), in one
// softmax with the compressed keys:
//   band scores  b_ij = q_i · k_j                       (B, H, Tq, W), W = 2w + 1, slot j − i + w
//   [P | P_band] = softmax(scale · [Q K̃ᵀ | b]) per row  (invalid slots: probability 0)
//   ctx_i       += Σ_j P_band,ij v_j
// A head that reads its neighbours is a band, and a band is not low rank (results/brown/
// attention_probe/): the compressed keys cannot carry it at k ≪ n. Forward and backward side by
// side; every view is per head with unit stride along D, scores contiguous. Queries, their
// gradients, the context and the band are the pass's query rows (B, H, Tq, ·): every position, or
// the last block's masked rows (QueryRows); keys and values are every position (B, H, T, D).

#include "linformer/core/tensor.h"
#include "linformer/layers/pass.h"

namespace linformer {

// The query rows of a band pass: row r of sequence b stands at position source[b·Tq + r] − b·T
// (QueryRows::source), or at r when source is nullptr (every row, Tq = T).
struct BandRows {
  int64_t T = 0, Tq = 0;
  const int32_t* source = nullptr;
  int64_t position(int64_t b, int64_t r) const { return source ? source[b * Tq + r] - b * T : r; }
};

class LocalBand {
 public:
  LocalBand() = default;
  explicit LocalBand(int64_t window) : w_(window) {}
  int64_t width() const { return 2 * w_ + 1; }

  // band (B, H, Tq, W) = q_r · k_j at slot j − t + w, t row r's position; −∞ where j is outside
  // [0, length_b).
  void scores(const BatchGeometry& g, const BandRows& rows, TensorView<const float> q, TensorView<const float> k,
              TensorView<float> band) const;
  // probs (rows, S) and band (rows, W) hold raw scores; both become softmax(scale · [probs | band]).
  static void softmax_forward(float* probs, int64_t S, float* band, int64_t W, int64_t rows, float scale);
  // ctx_r (B, H, Tq, D) += Σ_j P_band,rj v_j.
  void context_forward(const BandRows& rows, TensorView<const float> band_probs, TensorView<const float> v,
                       TensorView<float> ctx) const;

  // In the forward pass: ctx_r += Σ_j P_band,rj v_j. So dP_band,rj = d_ctx_r · v_j (0 at invalid
  // slots) and dv_j = Σ_r P_band,rj d_ctx_r (overwritten; 0 at positions no query row reads).
  void context_backward(const BandRows& rows, TensorView<const float> band_probs, TensorView<const float> v,
                        TensorView<const float> d_ctx, TensorView<float> d_band, TensorView<float> d_v) const;
  // The joint softmax: ds = scale · p ⊙ (dp − Σ over both parts of dp p), in place in d_probs and d_band.
  static void softmax_backward(float* d_probs, const float* probs, int64_t S, float* d_band, const float* band_probs,
                               int64_t W, int64_t rows, float scale);
  // b_rj = q_r · k_j: dq_r += Σ_j d_b,rj k_j (accumulates onto the compressed keys' part) and
  // dk_j = Σ_r d_b,rj q_r (overwritten; 0 at positions no query row reads).
  void scores_backward(const BandRows& rows, TensorView<const float> d_band, TensorView<const float> q,
                       TensorView<const float> k, TensorView<float> d_q, TensorView<float> d_k) const;

 private:
  int64_t w_ = 0;
};

}  // namespace linformer

#pragma once
// The local band of a Linformer layer with model.local_window = w: beside its K compressed keys,
// query i also attends at full resolution to keys j with |i − j| ≤ w (and j a real token), in one
// softmax with the compressed keys:
//   band scores  b_ij = q_i · k_j                       (B, H, T, W), W = 2w + 1, slot j − i + w
//   [P | P_band] = softmax(scale · [Q K̃ᵀ | b]) per row  (invalid slots: probability 0)
//   ctx_i       += Σ_j P_band,ij v_j
// A head that reads its neighbours is a band, and a band is not low rank (results/brown/
// attention_probe/): the compressed keys cannot carry it at k ≪ n. Forward and backward side by
// side; every view is per head (B, H, T, D) with unit stride along D, scores contiguous.

#include "linformer/core/tensor.h"
#include "linformer/layers/pass.h"

namespace linformer {

class LocalBand {
 public:
  LocalBand() = default;
  explicit LocalBand(int64_t window) : w_(window) {}
  int64_t width() const { return 2 * w_ + 1; }

  // band (B, H, T, W) = q_i · k_j at slot j − i + w; −∞ where j is outside [0, length_b).
  void scores(const BatchGeometry& g, TensorView<const float> q, TensorView<const float> k,
              TensorView<float> band) const;
  // probs (rows, S) and band (rows, W) hold raw scores; both become softmax(scale · [probs | band]).
  static void softmax_forward(float* probs, int64_t S, float* band, int64_t W, int64_t rows, float scale);
  // ctx_i += Σ_j P_band,ij v_j.
  void context_forward(TensorView<const float> band_probs, TensorView<const float> v, TensorView<float> ctx) const;

  // In the forward pass: ctx_i += Σ_j P_band,ij v_j. So dP_band,ij = d_ctx_i · v_j (0 at invalid
  // slots) and dv_j = Σ_i P_band,ij d_ctx_i (overwritten).
  void context_backward(TensorView<const float> band_probs, TensorView<const float> v, TensorView<const float> d_ctx,
                        TensorView<float> d_band, TensorView<float> d_v) const;
  // The joint softmax: ds = scale · p ⊙ (dp − Σ over both parts of dp p), in place in d_probs and d_band.
  static void softmax_backward(float* d_probs, const float* probs, int64_t S, float* d_band, const float* band_probs,
                               int64_t W, int64_t rows, float scale);
  // b_ij = q_i · k_j: dq_i += Σ_j d_b,ij k_j (accumulates onto the compressed keys' part) and
  // dk_j = Σ_i d_b,ij q_i (overwritten).
  void scores_backward(TensorView<const float> d_band, TensorView<const float> q, TensorView<const float> k,
                       TensorView<float> d_q, TensorView<float> d_k) const;

 private:
  int64_t w_ = 0;
};

}  // namespace linformer

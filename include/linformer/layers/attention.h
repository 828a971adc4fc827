#pragma once
// Multi-head self-attention: full (softmax over all real keys) or Linformer
// (keys and values compressed along the sequence to K rows). See the README's
// "The model" for the equations; in short, for Linformer:
//   K̃ = P_E(real ⊙ x W_Kᵀ) + b_K,  Ṽ = P_F(real ⊙ x W_Vᵀ) + b_V   (B, K, C)
//   head_h = softmax(Q_h K̃_hᵀ / √D) Ṽ_h
// The compression is project-first: the in_proj matmul is shared with full attention.

#include "linformer/layers/linear.h"
#include "linformer/layers/pass.h"
#include "linformer/model/workspace.h"

namespace linformer {

class Attention {
 public:
  Attention(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_batch);

  // x (B, T, C) -> y (B, T, C); overwrites y and this layer's caches.
  // key_valid (B, T): 1 for real tokens (full attention's key mask).
  void forward(const BatchGeometry& g, TensorView<const float> x, TensorView<float> y, const uint8_t* key_valid,
               const Pass& pass);
  // dy (B, T, C) -> dx (B, T, C), overwritten; parameter gradients accumulate.
  void backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const float> dy, TensorView<float> dx,
                const Pass& pass);

 private:
  // One Linformer compression operator: E or F (linear), a conv filter, or parameter-free pooling.
  struct Projection {
    TensorView<float> value, grad;  // (K, n) / (H, K, n) / (s) / (H, s); empty for pooling
    bool trainable = false;
  };
  // part (B, T, C), a strided column block of qkv -> out (B, K, C).
  void compress(const BatchGeometry& g, const Projection& p, TensorView<const float> part, TensorView<float> out) const;
  // In the forward pass: out = P(part). So d_part = Pᵀ d_out (overwritten, pad rows zero), dP += ….
  void compress_backward(const BatchGeometry& g, const Projection& p, TensorView<const float> d_out,
                         TensorView<const float> part, TensorView<float> d_part) const;

  // Views of the qkv buffer (B, T, 3C): which = 0 (Q), 1 (K), 2 (V).
  TensorView<float> qkv_part(TensorView<float> qkv, int which) const;
  // (B, T or K, C) as per-head (B, H, T or K, D), no copy.
  TensorView<float> heads(TensorView<float> x) const;

  const ModelSpec& spec_;
  const Workspace& ws_;
  int layer_;
  int64_t C_, H_, D_, K_, n_;
  bool linformer_;
  Linear in_proj_, out_proj_;
  Projection proj_e_, proj_f_;  // proj_f_ is proj_e_ when keys and values share it
  // Caches (per layer): qkv (B,T,3C); kc, vc (B,K,C); probs and dropped probs (B,H,T,S); ctx (B,T,C).
  int qkv_, kc_, vc_, probs_, probs_dropped_, ctx_;
  // Backward scratch (shared by all layers): d_ctx (B,T,C); d_probs (B,H,T,S); d_qkv (B,T,3C); d_kc, d_vc (B,K,C).
  int d_ctx_, d_probs_, d_qkv_, d_kc_, d_vc_;
};

}  // namespace linformer

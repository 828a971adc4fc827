#pragma once
// Multi-head self-attention: full (softmax over all real keys) or Linformer (keys and values
// compressed along the sequence to K rows). See the README's "The model" for the equations; in
// short, for Linformer:
//   K̃ = P_E(real ⊙ x W_Kᵀ) + b_K,  Ṽ = P_F(real ⊙ x W_Vᵀ) + b_V   (B, K, C)
//   head_h = softmax(Q_h K̃_hᵀ / √D) Ṽ_h
// One interface, one small class per variant family, built by make_attention:
//   FullAttention                 (full_attention.h)
//   LinformerCompressFirst        (linformer_attention.h) linear E shared by the heads (sharing
//                                 other than none), mean pooling, a shared conv filter: x is
//                                 compressed first, as fairseq does, K̃ = P_E(real ⊙ x) W_Kᵀ + b_K,
//                                 which projects K rows instead of n (fewer FLOPs, no (n, C) K, V)
//   LinformerProjectFirst         (linformer_attention.h) max pooling, per-head E or conv filters:
//                                 x is projected first, then K and V compressed
// Each keeps its own caches; what they share is in attention_core.h (scores, softmax, dropout,
// P·V, out_proj), compression.h (the operators P) and in_projection.h (in_proj, query rows).

#include "linformer/layers/attention_core.h"
#include "linformer/layers/pass.h"
#include "linformer/nn/workspace.h"

#include <memory>
#include <string>

namespace linformer {

// Whether this spec's Linformer layers compress x before projecting keys and values (linear,
// mean and conv compressions shared by all heads), and whether keys and values then share one
// compression (shared E, or mean pooling). make_attention and the FLOP count both ask.
bool compresses_input_first(const ModelSpec& spec);
bool shares_compression(const ModelSpec& spec);

class Attention {
 public:
  virtual ~Attention() = default;
  Attention(const Attention&) = delete;
  Attention& operator=(const Attention&) = delete;

  // The one place that says which Linformer tensors exist and how they are shared: layer l's
  // compressions E (keys) and F (values) are parameters named
  //   none, headwise: layers.{l}.attn.proj_e and .proj_f   (per head for none)
  //   kv:             layers.{l}.attn.proj_e, used as F too
  //   layerwise:      shared_proj, one for every layer, as E and F
  // (K, n) linear, (s) conv filters; (H, …) per head. Mean and max pooling have none.
  struct ProjectionNames {
    std::string e, f;  // equal when shared; empty for pooling and full attention
  };
  static ProjectionNames projection_names(const ModelSpec& spec, int layer);
  // layers.{l}.attn.in_proj (3C, C), .out_proj (C, C), and the layer's own projections.
  static void declare(ParameterTable& table, const ModelSpec& spec, int layer);
  // The projection every layer shares (layerwise sharing), declared once before the layers.
  static void declare_shared(ParameterTable& table, const ModelSpec& spec);
  // Matmul FLOPs of forward over B rows of T tokens, queries at Tq of them (follows the variants).
  static double forward_flops(const ModelSpec& spec, int layer, int64_t B, int64_t T, int64_t Tq);

  // x (B, T, C) -> y (B, T, C); overwrites y and this layer's caches.
  // key_valid (B, T): 1 for real tokens (full attention's key mask).
  // x_rounded: the kernel that made x also wrote its bf16 rounding into input_bf16(g).
  // rows, when given (selects_queries() only): queries at those rows alone, y (B, rows->Tq, C).
  void forward(const BatchGeometry& g, TensorView<const float> x, TensorView<float> y, const uint8_t* key_valid,
               const Pass& pass, bool x_rounded = false, const QueryRows* rows = nullptr);
  // dy (B, T, C) -> dx (B, T, C), overwritten; parameter gradients accumulate. With the forward
  // pass's query rows dy is (B, Tq, C) and dx still (B, T, C).
  void backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const float> dy, TensorView<float> dx,
                const Pass& pass, const QueryRows* rows = nullptr);
  // Whether forward and backward can take query rows (the last layer of a training model): the
  // queries' projection then runs apart from the keys' and values'.
  virtual bool selects_queries() const = 0;
  // The bf16 path of training: the cache (B·T, C) that x is rounded into once for every product
  // that reads it (in_proj's input cache, or compress-first Linformer's x cache when no row is
  // padded), for the kernel that makes x to write its rounding into; empty otherwise (x is then
  // rounded by the products themselves).
  virtual TensorView<bf16> input_bf16(const BatchGeometry& g) const = 0;

 protected:
  Attention(const ModelSpec& spec, const Workspace& ws, int layer);
  // forward and backward, their arguments checked.
  virtual void run_forward(const BatchGeometry& g, TensorView<const float> x, TensorView<float> y,
                           const uint8_t* key_valid, const Pass& pass, bool x_rounded, const QueryRows* rows) = 0;
  virtual void run_backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const float> dy,
                            TensorView<float> dx, const Pass& pass, const QueryRows* rows) = 0;
  // (B, T or K, C) as per-head (B, H, T or K, D), no copy.
  template <class T>
  TensorView<T> heads(TensorView<T> x) const {
    return split_heads(x, H_, D_);
  }

  const ModelSpec& spec_;
  const Workspace& ws_;
  int layer_;
  int64_t C_, H_, D_;
};

// Layer `layer`'s attention, the variant its spec asks for.
std::unique_ptr<Attention> make_attention(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer,
                                          int64_t max_batch);

}  // namespace linformer

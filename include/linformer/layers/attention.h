#pragma once
// Multi-head self-attention: full (softmax over all real keys) or Linformer
// (keys and values compressed along the sequence to K rows). See the README's
// "The model" for the equations; in short, for Linformer:
//   K̃ = P_E(real ⊙ x W_Kᵀ) + b_K,  Ṽ = P_F(real ⊙ x W_Vᵀ) + b_V   (B, K, C)
//   head_h = softmax(Q_h K̃_hᵀ / √D) Ṽ_h
// When the compression is linear and the same for every head (linear E with sharing other
// than none, mean pooling, a shared conv filter), it is applied to x first, as fairseq does:
// K̃ = P_E(real ⊙ x) W_Kᵀ + b_K, which projects K rows instead of n (fewer FLOPs, no (n, C)
// K and V buffers). Otherwise (max pooling, per-head projections) x is projected first.

#include "linformer/layers/linear.h"
#include "linformer/layers/pass.h"
#include "linformer/nn/workspace.h"

#include <vector>

namespace linformer {

// Whether this spec's Linformer layers compress x before projecting keys and values (linear,
// mean and conv compressions shared by all heads), and whether keys and values then share one
// compression (shared E, or mean pooling). The attention layer and the FLOP count both ask.
bool compresses_input_first(const ModelSpec& spec);
bool shares_compression(const ModelSpec& spec);

class Attention {
 public:
  Attention(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_batch);

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
  // Matmul FLOPs of forward over B rows of T tokens, queries at Tq of them (follows forward's branches).
  static double forward_flops(const ModelSpec& spec, int layer, int64_t B, int64_t T, int64_t Tq);

  // x (B, T, C) -> y (B, T, C); overwrites y and this layer's caches.
  // key_valid (B, T): 1 for real tokens (full attention's key mask).
  // x_rounded: the kernel that made x also wrote its bf16 rounding into input_bf16(g).
  // rows, when given (selects_queries() only): queries at those rows alone, y (B, rows->Tq, C).
  void forward(const BatchGeometry& g, TensorView<const float> x, TensorView<float> y, const uint8_t* key_valid,
               const Pass& pass, bool x_rounded = false, const QueryRows* rows = nullptr);
  // Whether forward and backward can take query rows (the last layer of a training model): the
  // queries' projection then runs apart from the keys' and values'.
  bool selects_queries() const { return static_cast<bool>(xq_); }
  // The bf16 path of training: the cache (B·T, C) that x is rounded into once for every product
  // that reads it (in_proj's input cache, or compress-first Linformer's x cache when no row is
  // padded), for the kernel that makes x to write its rounding into; empty otherwise (x is then
  // rounded by the products themselves).
  TensorView<bf16> input_bf16(const BatchGeometry& g) const;
  // dy (B, T, C) -> dx (B, T, C), overwritten; parameter gradients accumulate. With the forward
  // pass's query rows dy is (B, Tq, C) and dx still (B, T, C).
  void backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const float> dy, TensorView<float> dx,
                const Pass& pass, const QueryRows* rows = nullptr);

 private:
  // One Linformer compression operator: E or F (linear), a conv filter, or parameter-free pooling.
  struct Projection {
    TensorView<float> value, grad;  // (K, n) / (H, K, n) / (s) / (H, s); empty for pooling
    bool trainable = false;
    TensorView<const bf16> value_bf16;  // value's bf16 copy, when the parameters keep them
  };
  // part (B, T, C), strided, padded rows zero -> out (B, K, C), strided. part_bf16, when given
  // (the bf16 path's cached x), is part's rounding, read by the linear projection's products.
  void compress(const BatchGeometry& g, const Projection& p, TensorView<const float> part, TensorView<float> out,
                TensorView<const bf16> part_bf16 = {}) const;
  // In the forward pass: out = P(part). So d_part (=|+=) Pᵀ d_out (pad rows zeroed), dP += ….
  void compress_backward(const BatchGeometry& g, const Projection& p, TensorView<const float> d_out,
                         TensorView<const float> part, TensorView<float> d_part, Accumulate mode,
                         TensorView<const bf16> part_bf16 = {}) const;
  // The bf16 path of compress-first linear projections without padded rows: x rounded once into
  // the cache x_bf16_ for the Q projection, the compressions and their backward (forward fills it,
  // backward reads it); empty when x goes through the generic per-matmul rounding instead.
  bool caches_x_bf16(const BatchGeometry& g) const;
  TensorView<const bf16> round_x_into_bf16_cache(const BatchGeometry& g, TensorView<const float> x) const;
  TensorView<const bf16> x_bf16_from_cache(const BatchGeometry& g) const;

  // x with padded rows zeroed (x itself when no row is padded), in ctx's buffer: the forward
  // pass writes ctx only after compressing, and backward reads ctx only before.
  TensorView<const float> masked_input(const BatchGeometry& g, TensorView<const float> x) const;
  // Rows [begin·C, end·C) of in_proj's weight (the Q, K or V block, or K and V together).
  TensorView<const float> w_in(int begin, int end) const;
  TensorView<float> dw_in(int begin, int end) const;

  // A scores-shaped buffer (B, H, T, S) as (B, H, Tq, S): its first B·H·Tq rows. S is T itself for
  // full attention, so the view cannot come from extents with Tq for T.
  template <class T>
  TensorView<T> scores_view(const Buffer<T>& buffer, const Extents& e, int64_t Tq) const {
    const TensorView<T> all = ws_.view(buffer, e);
    return TensorView<T>(all.data(), Shape{all.size(0), H_, Tq, all.size(3)});
  }
  // Views of the qkv buffer (B, T, 3C): which = 0 (Q), 1 (K), 2 (V).
  TensorView<float> qkv_part(TensorView<float> qkv, int which) const;
  // The (2, B, K, C) K̃, Ṽ cache and the (B, K, 2C) dK̃ | dṼ gradient as (B, K, C): which = 0 (K̃),
  // 1 (Ṽ); as (B·K, C) with flat(). (The gradients' products run faster on interleaved rows.)
  TensorView<float> kv_part(TensorView<float> kv, int which) const;
  TensorView<float> d_kv_part(TensorView<float> d_kv, int which) const;
  static TensorView<float> flat(TensorView<float> x);
  // (B, T or K, C) as per-head (B, H, T or K, D), no copy.
  template <class T>
  TensorView<T> heads(TensorView<T> x) const {
    // Head h is columns [hD, (h+1)D) of every row, whatever the row stride.
    return TensorView<T>(x.data(), Shape{x.size(0), H_, x.size(1), D_}, Shape{x.stride(0), D_, x.stride(1), 1});
  }

  // The bf16 path's operands of the attention products, per head (B, H, T or S, D): views of the
  // bf16 caches that forward fills (round_heads_into_bf16_caches).
  struct HeadsBf16 {
    TensorView<const bf16> queries, keys, values;
  };
  // projected_rounded: the projections wrote Q (and full attention's K and V) rounded already.
  // e: every row (keys and values), eq: the query rows (e itself without QueryRows).
  HeadsBf16 round_heads_into_bf16_caches(const Extents& e, const Extents& eq, bool rows, bool projected_rounded) const;
  HeadsBf16 bf16_heads_from_caches(const Extents& e, const Extents& eq) const;
  // The f32 Q (B, Tq, C) of the last forward: a part of the qkv cache, or with query rows (full
  // attention) its own cache, since Q then has fewer rows than K and V.
  TensorView<float> queries_f32(const Extents& eq, bool rows) const;
  TensorView<float> queries_gradient(const Extents& eq, bool rows) const;
  // With query rows, where in_proj runs as one product otherwise (full attention, Linformer
  // projecting before it compresses): K | V = x W_KVᵀ (+ b_KV when kv_bias) over every row into the
  // qkv cache's K and V columns (full attention on the bf16 path: into its bf16 cache's K, V
  // blocks), Q = x_q W_Qᵀ + b_Q over the query rows into its own cache (or the bf16 Q block).
  // Returns whether Q, K, V were written rounded. Backward: the two parts' gradients, dx_q
  // scattered into dx.
  bool project_in_parts(const BatchGeometry& g, const QueryRows& rows, TensorView<const float> x, bool x_rounded,
                        bool kv_bias);
  // x (B, T, C, contiguous) at the query rows, (B·Tq, C), gathered into the xq_ cache; x's rounding
  // (B·T, C) at them into xq_bf16_.
  TensorView<const float> gather_query_rows(const QueryRows& rows, int64_t B, TensorView<const float> x) const;
  TensorView<const bf16> gather_query_rows(const QueryRows& rows, int64_t B, TensorView<const bf16> x_bf16) const;
  void backward_in_parts(const BatchGeometry& g, const QueryRows& rows, TensorView<const float> x,
                         TensorView<float> d_qkv, TensorView<float> dx, bool kv_bias);
  // Q = x_q W_Qᵀ + b_Q over eq's rows, dQ given (B, Tq, C): db_Q += Σ dQ, dW_Q += dQᵀ x_q and
  // dx_q = dQ W_Q (overwritten), from x_q's rounding when given (B, Tq, C), else from x_q.
  void backward_queries(const Extents& eq, TensorView<const float> d_q, TensorView<const float> xq,
                        TensorView<const bf16> xq_bf16, TensorView<float> dxq) const;
  bool runs_bf16() const;
  // Training on the bf16 path: P·V writes ctx rounded into out_proj's input cache, and out_proj's
  // backward writes d_ctx rounded into d_ctx_bf16_: neither is kept in f32.
  bool ctx_in_bf16() const;

  const ModelSpec& spec_;
  const Workspace& ws_;
  int layer_;
  int64_t C_, H_, D_, K_, n_;
  bool linformer_;
  bool compress_first_ = false;  // compress x, then project K rows (see the top)
  bool same_compression_ = false;  // P_F is P_E (shared E, or parameter-free pooling)
  Linear in_proj_, out_proj_;
  Projection proj_e_, proj_f_;  // proj_f_ is proj_e_ when keys and values share it
  // Caches (per layer): qkv (B,T,3C), or Q only (B,T,C) when compressing first; xc_e, xc_f the
  // compressed inputs (B,K,C) when compressing first (xc_f is xc_e when the same); kv K̃ | Ṽ
  // (B,K,2C); probs and dropped probs (B,H,T,S), S = K or T (the bf16 path keeps P only in
  // probs_bf16_ unless attention dropout needs it in f32); ctx (B,T,C). Shapes are stated where the
  // constructor reserves them.
  Buffer<float> qkv_, xc_e_, xc_f_, kv_, probs_, probs_dropped_, ctx_;
  // Backward scratch (shared by all layers): d_ctx (B,T,C), reused at the end for d(real ⊙ x);
  // d_probs (B,H,T,S); d_qkv (B,T,3C) or (B,T,C); d_kv (B,K,2C); d_xc_e, d_xc_f (B,K,C).
  Buffer<float> d_ctx_, d_probs_, d_qkv_, d_kv_, d_xc_e_, d_xc_f_;
  // The bf16 path (parameters with bf16 copies): what the four attention products read twice,
  // rounded once (in inference, where they are read once, they keep the rounded operands in the
  // workspace and its plan, not in the matmul's scratch). Caches: Q, K, V (3,B,T,C) for full attention, else Q (B,T,C) and
  // K̃, Ṽ (2,B,K,C), each part dense; the used probabilities (B,H,T,S). Backward scratch: d_ctx (B,T,C),
  // d_probs (B,H,T,S).
  Buffer<bf16> qkv_bf16_, kv_bf16_, probs_bf16_, d_ctx_bf16_, d_probs_bf16_;
  Buffer<bf16> x_bf16_;  // cache (B,T,C): see caches_x_bf16; d_ctx_bf16_ then also holds dQ's rounding
  Buffer<bf16> d_xc_bf16_;  // backward scratch (B,K,C): a compression's output gradient, rounded once
  // Query rows (the last layer of a training model, compress-first): x at those rows (B,Tq,C) and
  // its rounding (the bf16 path's x cache), caches; the gradient of those rows, backward scratch.
  Buffer<float> xq_, d_xq_;
  Buffer<bf16> xq_bf16_;
  Buffer<float> q_rows_, d_q_rows_;  // in_proj in parts (query rows): Q (B,Tq,C) cache, dQ scratch
  // With query rows and attention dropout: (B·H·Tq) the row of the layer's (B, H, T, S) scores each
  // score row stands for, whose dropout mask it takes (capacity reserved with the layer).
  std::vector<int32_t> score_rows_;
  const int32_t* score_rows(const BatchGeometry& g, const QueryRows* rows);
  // bf16 inference: the scores are written in bf16 into probs_bf16_ and become P there (no f32
  // probs_): half of fp32's score memory, where otherwise bf16 would keep both.
  bool scores_in_bf16_ = false;
};

}  // namespace linformer

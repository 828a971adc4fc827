#pragma once
// Linformer attention, the two families (see attention.h): both end with the compressed keys and
// values K̃, Ṽ (B, K, C) that the attention core reads; they differ in what they compress.
//   LinformerCompressFirst: x̃_E = P_E(real ⊙ x), x̃_F = P_F(real ⊙ x) (B, K, C);
//                           Q = x W_Qᵀ + b_Q, K̃ = x̃_E W_Kᵀ + b_K, Ṽ = x̃_F W_Vᵀ + b_V
//   LinformerProjectFirst:  [Q | K | V] = x W_inᵀ (+ b_Q on Q);
//                           K̃ = P_E(real ⊙ K) + b_K, Ṽ = P_F(real ⊙ V) + b_V
// For operators that are linear and the same for every head the two are equal (fairseq's order:
// the bias after compression).

#include "linformer/layers/attention.h"
#include "linformer/layers/compression.h"
#include "linformer/layers/in_projection.h"

#include <utility>

namespace linformer {

// What both families share: the compressions, K̃ and Ṽ, their bf16 rounding, the core.
class LinformerAttention : public Attention {
 public:
  bool selects_queries() const override { return in_proj_.selects_queries(); }

 protected:
  LinformerAttention(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_batch,
                     bool compress_first);
  // K̃ (which = 0) or Ṽ (1), (B, K, C) dense; their gradients dK̃ | dṼ (B, K, 2C) and its halves.
  TensorView<float> compressed(const Extents& e, int which) const {
    return ws_.view(compressed_.kv, e).select(0, which);
  }
  TensorView<float> d_compressed(const Extents& e) const { return ws_.view(compressed_.d_kv, e); }
  TensorView<float> d_compressed(const Extents& e, int which) const {
    return d_compressed(e).slice(2, which * C_, (which + 1) * C_);
  }
  // The bf16 path: Q (B, Tq, C) (unless projected rounded), K̃ and Ṽ rounded into their caches.
  void round_heads(const Extents& e, const Extents& eq, TensorView<const float> queries, bool queries_rounded) const;
  // Q (B, Tq, C), K̃, Ṽ as the core reads them; the gradients' buffers, dQ given.
  HeadOperands operands(const Extents& e, const Extents& eq, TensorView<const float> queries) const;
  HeadGradients gradients(const Extents& e, TensorView<float> d_queries) const;
  // K̃ and Ṽ got their biases after compression: db_K | db_V += column sums of dK̃ | dṼ.
  void compressed_bias_backward(const Extents& e) const;

  int64_t K_;
  InProjection in_proj_;
  AttentionCore core_;
  Compression proj_e_, proj_f_;  // P_E (keys), P_F (values): the same parameters when shared
  struct CompressedCache {
    Buffer<float> kv;      // (2, B, K, C): K̃, Ṽ, each a dense block
    Buffer<bf16> q_bf16;   // (B, T, C): Q rounded (bf16 path)
    Buffer<bf16> kv_bf16;  // (2, B, K, C): K̃, Ṽ rounded (bf16 path)
    Buffer<float> d_kv;    // backward scratch (B, K, 2C): dK̃ | dṼ (their products run faster interleaved)
  } compressed_;
};

// Linear E shared by the heads, mean pooling, a shared conv filter: x compressed, then K rows projected.
class LinformerCompressFirst final : public LinformerAttention {
 public:
  LinformerCompressFirst(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_batch);
  TensorView<bf16> input_bf16(const BatchGeometry& g) const override;

 private:
  void run_forward(const BatchGeometry& g, TensorView<const float> x, TensorView<float> y, const uint8_t* key_valid,
                   const Pass& pass, bool x_rounded, const QueryRows* rows) override;
  void run_backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const float> dy, TensorView<float> dx,
                    const Pass& pass, const QueryRows* rows) override;
  // Q = x_q W_Qᵀ + b_Q over the query rows (every row without them), from x's rounding when given
  // (then written rounded); returns Q's f32 view (B, Tq, C).
  TensorView<float> project_queries(const BatchGeometry& g, TensorView<const float> x, TensorView<const bf16> x_bf16,
                                    const QueryRows* rows) const;
  // x̃_E, x̃_F = P(real ⊙ x); K̃ = x̃_E W_Kᵀ + b_K, Ṽ = x̃_F W_Vᵀ + b_V.
  void compress_and_project(const BatchGeometry& g, TensorView<const float> x, TensorView<const bf16> x_bf16) const;
  // Its backward in two steps: from dK̃ | dṼ to dx̃_E, dx̃_F (dW_K, dW_V accumulate), then to
  // d(real ⊙ x) in d_xm (overwritten; padded rows zero).
  void project_backward(const Extents& e) const;
  void compress_backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const bf16> x_bf16,
                         TensorView<float> d_xm) const;
  // The bf16 path without padded rows: x rounded once into cache_.x_bf16 for the Q projection, the
  // compressions and their backward (forward fills it, backward reads it); empty when x goes
  // through the generic per-matmul rounding instead.
  bool caches_x_bf16(const BatchGeometry& g) const;
  TensorView<const bf16> round_x_into_bf16_cache(const BatchGeometry& g, TensorView<const float> x) const;
  TensorView<const bf16> x_bf16_from_cache(const BatchGeometry& g) const;
  // x with padded rows zeroed (x itself when no row is padded), in the core's ctx buffer: forward
  // writes ctx only after compressing, and backward reads ctx only before.
  TensorView<const float> masked_input(const BatchGeometry& g, TensorView<const float> x) const;

  bool same_compression_;  // P_F is P_E (shared E, or mean pooling): x̃_F is x̃_E
  struct Cache {
    Buffer<float> q;           // (B, T, C): Q
    Buffer<float> xc_e, xc_f;  // (B, K, C): x̃_E, x̃_F (xc_f is xc_e when the same)
    Buffer<bf16> x_bf16;       // (B, T, C): x rounded (bf16 path, linear E; see caches_x_bf16)
  } cache_;
  struct Scratch {
    Buffer<float> d_q;             // (B, T, C): dQ
    Buffer<float> d_xc_e, d_xc_f;  // (B, K, C): dx̃_E, dx̃_F (the same buffer when the same)
  } scratch_;
};

// Max pooling, per-head E or conv filters, or any compression with a local band
// (model.local_window): x projected (every row), then K and V compressed.
class LinformerProjectFirst final : public LinformerAttention {
 public:
  LinformerProjectFirst(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_batch);
  TensorView<bf16> input_bf16(const BatchGeometry& g) const override { return in_proj_.linear.input_bf16(g.rows()); }

 private:
  void run_forward(const BatchGeometry& g, TensorView<const float> x, TensorView<float> y, const uint8_t* key_valid,
                   const Pass& pass, bool x_rounded, const QueryRows* rows) override;
  void run_backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const float> dy, TensorView<float> dx,
                    const Pass& pass, const QueryRows* rows) override;
  // Q (B, Tq, C): the qkv cache's first C columns, or with query rows in_proj's Q-rows cache.
  TensorView<float> queries_f32(const Extents& eq, const QueryRows* rows) const;

  // model.local_window: the band's full-resolution keys and values (with biases) as the core
  // reads them, and their gradients, added into dK | dV after the compressions' backward.
  HeadOperands with_band(HeadOperands h, const Extents& e) const;
  HeadGradients with_band(HeadGradients d, const Extents& e) const;
  std::pair<TensorView<float>, TensorView<float>> band_heads(TensorView<float> kv) const;  // (B, T, 2C) per head
  void band_backward(const Extents& e, TensorView<float> d_qkv) const;

  struct Cache {
    Buffer<float> qkv;      // (B, T, 3C): Q | K | V, K and V without bias, padded rows zeroed
    Buffer<float> kv_band;  // (B, T, 2C): K + b_K | V + b_V at every row (local_window only)
  } cache_;
  struct Scratch {
    Buffer<float> d_qkv;      // (B, T, 3C): dQ | dK | dV
    Buffer<float> d_kv_band;  // (B, T, 2C): the band's dK | dV (local_window only)
  } scratch_;
};

}  // namespace linformer

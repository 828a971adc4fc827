#pragma once
// Full attention: every query against every real key of its sequence.
//   [Q | K | V] = x W_inᵀ + b_in (B, T, 3C); head_h = softmax(Q_h K_hᵀ / √D + mask) V_h
// in_proj runs as one product, or with query rows in two parts (K and V over every row, Q over
// the selected rows).

#include "linformer/layers/attention.h"
#include "linformer/layers/in_projection.h"

namespace linformer {

class FullAttention final : public Attention {
 public:
  FullAttention(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_batch);
  bool selects_queries() const override { return in_proj_.selects_queries(); }
  TensorView<bf16> input_bf16(const BatchGeometry& g) const override;

 private:
  void run_forward(const BatchGeometry& g, TensorView<const float> x, TensorView<float> y, const uint8_t* key_valid,
                   const Pass& pass, bool x_rounded, const QueryRows* rows) override;
  void run_backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const float> dy, TensorView<float> dx,
                    const Pass& pass, const QueryRows* rows) override;
  // Q, K, V into the caches; returns whether they were written only rounded (the bf16 path).
  bool project(const BatchGeometry& g, TensorView<const float> x, bool x_rounded, const QueryRows* rows);
  // The bf16 path: Q, K, V rounded into their bf16 blocks (unless projected rounded).
  void round_heads(const Extents& e, const Extents& eq, const QueryRows* rows) const;
  // The caches as the core reads them, and the gradients' buffers; eq: the query rows' extents.
  HeadOperands operands(const Extents& e, const Extents& eq, const QueryRows* rows) const;
  HeadGradients gradients(const Extents& e, const Extents& eq, const QueryRows* rows) const;
  // Q (B, Tq, C): the qkv cache's first C columns, or with query rows in_proj's Q-rows cache.
  TensorView<float> queries_f32(const Extents& eq, const QueryRows* rows) const;

  InProjection in_proj_;
  AttentionCore core_;
  struct Cache {
    Buffer<float> qkv;      // (B, T, 3C): Q | K | V as in_proj writes them
    Buffer<bf16> qkv_bf16;  // (3, B, T, C): Q, K, V rounded, each a dense block (bf16 path)
  } cache_;
  struct Scratch {
    Buffer<float> d_qkv;  // (B, T, 3C): dQ | dK | dV
  } scratch_;
};

}  // namespace linformer

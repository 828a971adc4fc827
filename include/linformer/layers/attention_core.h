#pragma once
// What every attention variant shares once it has per-head queries, keys and values:
//   scores = Q_h K_hᵀ (B, H, Tq, S); P = softmax(scores / √D) over real keys (full attention's key
//   mask; none for Linformer's S = K rows); P_used = dropout(P); ctx_h = P_used V_h (B, Tq, C);
//   y = ctx W_oᵀ + b_o (out_proj)
// and its backward down to dQ, dK, dV. S is T for full attention, K for Linformer. Also the bf16
// path's rounded P and the buffers a variant may borrow as scratch (ctx, d_ctx).

#include "linformer/layers/linear.h"
#include "linformer/layers/local_band.h"
#include "linformer/layers/pass.h"
#include "linformer/nn/model_spec.h"
#include "linformer/nn/workspace.h"

#include <vector>

namespace linformer {

// (B, T or S, C), any row stride, as per-head (B, H, T or S, D), no copy: head h is columns
// [hD, (h+1)D) of every row.
template <class T>
TensorView<T> split_heads(TensorView<T> x, int64_t H, int64_t D) {
  return TensorView<T>(x.data(), Shape{x.size(0), H, x.size(1), D}, Shape{x.stride(0), D, x.stride(1), 1});
}
// (B, S, C) with row stride s -> (B·S, C) with row stride s (rows of a batch evenly spaced).
TensorView<float> flat_rows(TensorView<float> x);
// x (rows, C) with a row stride: add bias (C) to every row.
void add_bias_rows(float* x, int64_t rows, int64_t C, int64_t row_stride, const float* bias);

// The operands of the attention products for one pass, per head: queries (B, H, Tq, D), keys and
// values (B, H, S, D). The f32 path reads the f32 views, the bf16 path (AttentionCore::runs_bf16)
// the rounded ones, which the variant fills before forward (Q, K, V are each read twice).
// With a local band (model.local_window), also the full-resolution keys and values with their
// biases (B, H, T, D), f32 only.
struct HeadOperands {
  TensorView<const float> queries, keys, values;
  TensorView<const bf16> queries_bf16, keys_bf16, values_bf16;
  TensorView<const float> band_keys, band_values;
};
// Their gradients, same shapes, overwritten by backward.
struct HeadGradients {
  TensorView<float> queries, keys, values;
  TensorView<float> band_keys, band_values;
};

class AttentionCore {
 public:
  AttentionCore() = default;
  // S: the keys' axis (Dim::tokens(n) for full attention, K_l for Linformer; a Linformer with
  // model.local_window also gets the band of local_band.h). bf16_caches: the
  // parameters keep bf16 copies (the bf16 path's caches are reserved, in inference too).
  // query_rows: this layer can take QueryRows (dropout then maps score rows to the layer's).
  AttentionCore(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_batch, Dim S,
                bool bf16_caches, bool query_rows);

  // The four products take bf16 operands from the variant's bf16 caches.
  bool runs_bf16() const { return bf16_caches_ && matmul_bf16_operands(); }

  // heads -> y (B, Tq, C), overwritten; key_valid (B, T) masks full attention's keys (nullptr:
  // none). rows: the query rows of the pass (nullptr: every row, Tq = T).
  void forward(const BatchGeometry& g, const HeadOperands& heads, TensorView<float> y, const uint8_t* key_valid,
               const Pass& pass, const QueryRows* rows);
  // dy (B, Tq, C) -> the heads' gradients (overwritten); out_proj's parameter gradients accumulate.
  void backward(const BatchGeometry& g, TensorView<const float> dy, const HeadOperands& heads,
                const HeadGradients& d_heads, const Pass& pass, const QueryRows* rows);

  // Buffers a variant may borrow (B, T, C): ctx is free before forward's P·V and after backward's
  // out_proj step, d_ctx after backward's attention products; d_ctx_bf16 (bf16 path) likewise.
  TensorView<float> ctx_buffer(const Extents& e) const { return ws_->view(cache_.ctx, e); }
  TensorView<float> d_ctx_buffer(const Extents& e) const { return ws_->view(scratch_.d_ctx, e); }
  TensorView<bf16> d_ctx_bf16_buffer(const Extents& e) const {  // empty off the bf16 path
    return scratch_.d_ctx_bf16 ? ws_->view(scratch_.d_ctx_bf16, e) : TensorView<bf16>{};
  }

 private:
  // Training on the bf16 path: P·V writes ctx rounded into out_proj's input cache, and out_proj's
  // backward writes d_ctx rounded into scratch_.d_ctx_bf16: neither is kept in f32.
  bool ctx_in_bf16() const { return runs_bf16() && out_proj_.keeps_bf16_caches(); }
  // A scores-shaped buffer (B, H, T, S) as (B, H, Tq, S): its first B·H·Tq rows. S is T itself for
  // full attention, so the view cannot come from extents with Tq for T.
  template <class T>
  TensorView<T> scores_view(const Buffer<T>& buffer, const Extents& e, int64_t Tq) const {
    const TensorView<T> all = ws_->view(buffer, e);
    return TensorView<T>(all.data(), Shape{all.size(0), H_, Tq, all.size(3)});
  }
  // P (f32 or bf16) -> P_used -> ctx -> y, after the scores are made.
  void probabilities_forward(const BatchGeometry& g, const HeadOperands& heads, TensorView<float> y, const Pass& pass,
                             const QueryRows* rows);
  void products_backward_f32(const BatchGeometry& g, const HeadOperands& heads, const HeadGradients& d_heads,
                             TensorView<const float> d_ctx, float scale, const Pass& pass, const QueryRows* rows);
  void products_backward_bf16(const BatchGeometry& g, const HeadOperands& heads, const HeadGradients& d_heads,
                              TensorView<const bf16> d_ctx, float scale, const Pass& pass, const QueryRows* rows);
  // P_band,used: the band's probabilities, or in training with attention dropout their dropout
  // (its own mask, DropoutSite::attention_band_probs) written to band_dropped_.
  TensorView<const float> band_used(const BatchGeometry& g, const Pass& pass, const QueryRows* rows);
  static BandRows band_rows(const BatchGeometry& g, const QueryRows* rows);
  // P_used = dropout(P): the same mask on dP_used, in place in scratch_.d_probs.
  void dropout_backward(const BatchGeometry& g, int64_t Tq, const Pass& pass, const QueryRows* rows);
  // With query rows and attention dropout: (B·H·Tq) the row of the layer's (B, H, T, S) scores each
  // score row stands for, whose dropout mask it takes (capacity reserved with the layer).
  const int32_t* score_rows(const BatchGeometry& g, const QueryRows* rows);

  const ModelSpec* spec_ = nullptr;
  const Workspace* ws_ = nullptr;
  int layer_ = 0;
  int64_t C_ = 0, H_ = 0, D_ = 0;
  bool bf16_caches_ = false;
  Linear out_proj_;  // layers.{l}.attn.out_proj (C, C)
  struct Cache {
    Buffer<float> probs;          // (B, H, T, S): P (none on the bf16 path without attention dropout)
    Buffer<float> probs_dropped;  // (B, H, T, S): P_used = dropout(P) (attention dropout only)
    Buffer<float> ctx;            // (B, T, C): the heads side by side, out_proj's input
    Buffer<bf16> probs_bf16;      // (B, H, T, S): P rounded (bf16 path; inference: the scores, then P)
  } cache_;
  struct Scratch {               // backward only, shared by all layers
    Buffer<float> d_ctx;         // (B, T, C)
    Buffer<float> d_probs;       // (B, H, T, S): dP_used, dP, then d_scores
    Buffer<bf16> d_ctx_bf16;     // (B, T, C): d_ctx rounded (bf16 path)
    Buffer<bf16> d_scores_bf16;  // (B, H, T, S): dP, then d_scores, rounded (bf16 path)
  } scratch_;
  std::vector<int32_t> score_rows_;
  LocalBand band_;  // width 1 (unused) without model.local_window
  bool has_band_ = false;
  Buffer<float> band_probs_;    // cache (B, H, Tq, W): the band's scores, then its probabilities
  Buffer<float> band_dropped_;  // cache (B, H, Tq, W): P_band,used = dropout(P_band) (attention dropout only)
  Buffer<float> d_band_probs_;  // backward scratch (B, H, Tq, W): dP_band, then d_band scores
  // bf16 inference: the scores are written in bf16 into cache_.probs_bf16 and become P there (no f32
  // P): half of fp32's score memory, where otherwise bf16 would keep both.
  bool scores_in_bf16_ = false;
};

}  // namespace linformer

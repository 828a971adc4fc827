#pragma once
// The attention's input projection [Q | K | V] = x W_inᵀ + b_in (layers.{l}.attn.in_proj, W_in
// (3C, C): rows [0, C) give Q, [C, 2C) K, [2C, 3C) V), as one product or in slices, and the last
// layer's query rows (QueryRows): there Q is computed at the selected rows only, from x gathered at
// them, while K and V still come from every row.

#include "linformer/layers/linear.h"
#include "linformer/layers/pass.h"
#include "linformer/nn/model_spec.h"
#include "linformer/nn/workspace.h"

namespace linformer {

// Whether layer `layer` of a model on this workspace can take query rows (the last layer of a
// training model).
bool layer_takes_query_rows(const ModelSpec& spec, const Workspace& ws, int layer);

class InProjection {
 public:
  InProjection() = default;
  // whole: in_proj can run as one Linear (full attention, Linformer projecting first), so it keeps
  // the bf16 path's operand caches. Otherwise (compress-first Linformer) only its slices run, and
  // x_rounding_cached says whether the variant keeps x's rounding when the parameters keep bf16
  // copies (then the query rows' rounding is kept too).
  InProjection(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_batch, bool whole,
               bool x_rounding_cached);

  Linear linear;  // W_in (3C, C), b_in (3C)
  // Rows [begin·C, end·C) of W_in and of its gradient (the Q, K or V block, or K and V together).
  TensorView<const float> w(int begin, int end) const { return linear.w.slice(0, begin * C_, end * C_); }
  TensorView<float> dw(int begin, int end) const { return linear.dw.slice(0, begin * C_, end * C_); }
  TensorView<const bf16> w_bf16(int begin, int end) const { return linear.w_bf16.slice(0, begin * C_, end * C_); }
  // b_in's block `which` (0 Q, 1 K, 2 V), and its gradient's.
  const float* bias(int which) const { return linear.b.data() + which * C_; }
  float* d_bias(int which) const { return linear.db.data() + which * C_; }

  bool selects_queries() const { return static_cast<bool>(xq_); }
  // x (B, T, C, contiguous) at the query rows, (B·Tq, C), gathered into the x_q cache; x's rounding
  // (B·T, C) at them into its rounded cache.
  TensorView<const float> gather_query_rows(const QueryRows& rows, int64_t B, TensorView<const float> x) const;
  TensorView<const bf16> gather_query_rows(const QueryRows& rows, int64_t B, TensorView<const bf16> x_bf16) const;
  // The caches of the last forward's query rows (B, Tq, C): x_q, its rounding; backward scratch dx_q.
  TensorView<float> query_rows_input(const Extents& eq) const { return ws_->view(xq_, eq); }
  TensorView<bf16> query_rows_input_bf16(const Extents& eq) const { return ws_->view(xq_bf16_, eq); }
  TensorView<float> query_rows_dx(const Extents& eq) const { return ws_->view(d_xq_, eq); }
  // In parts (whole only): Q at the query rows (B, Tq, C), its cache, and dQ there, scratch.
  TensorView<float> query_rows_q(const Extents& eq) const { return ws_->view(q_rows_, eq); }
  TensorView<float> query_rows_dq(const Extents& eq) const { return ws_->view(d_q_rows_, eq); }

  // With query rows, where in_proj runs as one product otherwise: K | V = x W_KVᵀ (+ b_KV when
  // kv_bias) over every row into kv (B·T, 2C), Q = x_q W_Qᵀ + b_Q over the query rows into
  // query_rows_q. qkv_bf16, when given ((3, B·T, C): full attention on the bf16 path), takes K, V
  // and Q instead, rounded, each into its block. Returns whether they were written rounded.
  bool project_in_parts(const BatchGeometry& g, const QueryRows& rows, TensorView<const float> x, bool x_rounded,
                        bool kv_bias, TensorView<float> kv, TensorView<bf16> qkv_bf16) const;
  // Its backward from d_qkv (B, T, 3C; dQ in query_rows_dq): dW_KV (+ db_KV when kv_bias) and dW_Q,
  // db_Q accumulate; dx (B, T, C) overwritten, dx_q scattered into it. d_q_bf16: scratch (B, Tq, C)
  // for dQ's rounding (the bf16 path).
  void backward_in_parts(const BatchGeometry& g, const QueryRows& rows, TensorView<const float> x,
                         TensorView<float> d_qkv, TensorView<float> dx, bool kv_bias, TensorView<bf16> d_q_bf16) const;
  // In the forward pass: Q = x_q W_Qᵀ + b_Q over eq's rows. So, dQ given (B, Tq, C): db_Q += Σ dQ,
  // dW_Q += dQᵀ x_q and dx_q = dQ W_Q (overwritten), from x_q's rounding when given (B, Tq, C), dQ
  // then rounded into d_q_bf16 (B, Tq, C), else from x_q.
  void backward_queries(const Extents& eq, TensorView<const float> d_q, TensorView<const float> xq,
                        TensorView<const bf16> xq_bf16, TensorView<float> dxq, TensorView<bf16> d_q_bf16) const;

 private:
  const Workspace* ws_ = nullptr;
  int64_t C_ = 0;
  // Query rows: x at them (B, T, C) and its rounding, caches; dx_q, backward scratch; in parts, Q
  // at them (B, T, C), cache, and dQ, scratch. Reserved with T rows, viewed with Tq.
  Buffer<float> xq_, d_xq_, q_rows_, d_q_rows_;
  Buffer<bf16> xq_bf16_;
};

}  // namespace linformer

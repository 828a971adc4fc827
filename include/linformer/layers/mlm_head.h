#pragma once
// The masked-LM head, evaluated only at the M masked positions:
//   z = x[masked]; logits = LN_head(GELU(dense(z))) tokensᵀ + bias     (M, V)
// with the output projection tied to the token embedding, and the fused
// cross-entropy whose gradient replaces the logits in place.

#include "linformer/kernels/cross_entropy.h"
#include "linformer/layers/layer_norm.h"
#include "linformer/layers/linear.h"
#include "linformer/nn/workspace.h"

namespace linformer {

class MlmHead {
 public:
  MlmHead(const ModelSpec& spec, const Parameters& params, Workspace& ws, int64_t max_masked);
  // mlm_head.dense (C, C), mlm_head.ln, mlm_head.bias (V); the output projection is embed.tokens.
  static void declare(ParameterTable& table, const ModelSpec& spec);
  // Matmul FLOPs at M masked positions: dense and the tied projection.
  static double forward_flops(const ModelSpec& spec, double M);

  // x (rows, C); positions (M) index its rows. Leaves the logits in logits(M) when grad_scale == 0;
  // otherwise replaces them with the gradient of grad_scale · (Σ cross-entropy) (on the bf16 path
  // the logits stay, the gradient goes only rounded into a scratch, and the output bias's
  // gradient is accumulated here already: forward with a gradient scale is always followed by
  // backward).
  CrossEntropyResult forward(TensorView<const float> x, const int32_t* positions, const int32_t* targets, int64_t M,
                             float grad_scale);
  // Overwrites dx (rows, C): zero except at the masked rows. Accumulates parameter gradients.
  void backward(TensorView<float> dx, const int32_t* positions, int64_t M);

  TensorView<float> logits(int64_t M) const;

 private:
  const ModelSpec& spec_;
  const Workspace& ws_;
  Linear dense_;
  LayerNorm ln_;
  TensorView<float> tokens_, d_tokens_, bias_, d_bias_;       // (V, C), (V)
  TensorView<const bf16> tokens_bf16_;                        // (V, C), when the parameters keep bf16 copies
  Buffer<float> z_, pre_, act_, out_, mean_, rstd_, logits_;  // caches: (M, C) ×4, (M) ×2, (M, V)
  // (pre_ holds GELU's derivative at the dense layer's output once forward has run)
  Buffer<float> d_a_, d_b_;        // shared scratch (M, C)
  Buffer<bf16> d_logits_bf16_;     // bf16 path: scratch (M, V)
  bool gradient_in_bf16_ = false;  // forward wrote d_logits_bf16_ and added the output bias's gradient
};

}  // namespace linformer

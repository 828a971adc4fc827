#pragma once
// x = Dropout(LN_emb(tokens[ids] + positions[t])), t = 0 … T-1.

#include "linformer/layers/layer_norm.h"
#include "linformer/layers/pass.h"
#include "linformer/nn/workspace.h"

namespace linformer {

class Embedding {
 public:
  Embedding(const ModelSpec& spec, const Parameters& params, Workspace& ws, int64_t max_batch);
  // embed.tokens (V, C) (the <pad> row zero; tied to the MLM head's output), embed.positions
  // (n, C) (learned, or fixed sinusoids: not trainable, no gradient), embed.ln.
  static void declare(ParameterTable& table, const ModelSpec& spec);

  // ids (B, T) -> y (B, T, C); overwrites y and the caches. y_bf16 (B·T, C), when given: where y's
  // bf16 rounding is wanted (the first block's input cache); written by the LayerNorm when no
  // dropout follows it. Returns whether y_bf16 was written.
  bool forward(const BatchGeometry& g, const int32_t* ids, TensorView<float> y, const Pass& pass,
               TensorView<bf16> y_bf16 = {});
  // Accumulates the token, (learned) position and LayerNorm gradients from dy (B, T, C). dy is used as scratch.
  void backward(const BatchGeometry& g, const int32_t* ids, TensorView<float> dy, const Pass& pass);

 private:
  const ModelSpec& spec_;
  const Workspace& ws_;
  TensorView<float> tokens_, positions_, d_tokens_, d_positions_;  // (V, C), (n, C)
  LayerNorm ln_;
  Buffer<float> sum_, mean_, rstd_;  // caches: the LN input (rows, C) and its statistics
  Buffer<float> d_sum_;              // shared scratch (rows, C)
};

}  // namespace linformer

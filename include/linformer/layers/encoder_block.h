#pragma once
// One encoder block: attention and feed-forward, each with dropout, a residual
// connection and a LayerNorm, after (post-LN, RoBERTa) or before (pre-LN) it:
//   post: a = x + drop(attn(x)); h = LN_attn(a); f = h + drop(ffn(h)); y = LN_ffn(f)
//   pre:  a = x + drop(attn(LN_attn(x))); y = a + drop(ffn(LN_ffn(a)))

#include "linformer/layers/attention.h"
#include "linformer/layers/feed_forward.h"
#include "linformer/layers/layer_norm.h"

#include <memory>

namespace linformer {

class EncoderBlock {
 public:
  EncoderBlock(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_batch);
  // Attention's, layers.{l}.ln_attn, the feed-forward's, layers.{l}.ln_ffn.
  static void declare(ParameterTable& table, const ModelSpec& spec, int layer);
  // Matmul FLOPs of forward over B rows of T tokens, the output at Tq of them (QueryRows).
  static double forward_flops(const ModelSpec& spec, int layer, int64_t B, int64_t T, int64_t Tq);

  // x (B, T, C) -> y (B, T, C); x must stay intact until backward (it is the previous block's output).
  // x_rounded: x's maker also wrote its bf16 rounding into input_bf16(g). y_bf16 (B·T, C), when
  // given: the next block's input_bf16(g), where the kernel that makes y writes y's rounding too.
  // rows, when given (selects_queries() only): y only at those rows, (B, rows->Tq, C); no y_bf16.
  void forward(const BatchGeometry& g, TensorView<const float> x, TensorView<float> y, const uint8_t* key_valid,
               const Pass& pass, bool x_rounded = false, TensorView<bf16> y_bf16 = {}, const QueryRows* rows = nullptr);
  // Whether this block can compute its output at some rows only (see QueryRows).
  bool selects_queries() const { return attention_->selects_queries(); }
  // The bf16 path of training, post-LN: the attention's input cache, for the kernel that makes this
  // block's input (the previous block's LN_ffn, the embedding's LayerNorm) to write x's rounding
  // into. Empty otherwise: pre-LN, the block's own LN_attn makes the attention's input and writes it.
  TensorView<bf16> input_bf16(const BatchGeometry& g) const;
  // dy (B, T, C) -> dx (B, T, C), overwritten (dx must not alias dy); parameter gradients accumulate.
  // With the forward pass's rows, dy is (B, Tq, C).
  void backward(const BatchGeometry& g, TensorView<const float> x, TensorView<const float> dy, TensorView<float> dx,
                const Pass& pass, const QueryRows* rows = nullptr);

 private:
  const ModelSpec& spec_;
  const Workspace& ws_;
  int layer_;
  std::unique_ptr<Attention> attention_;  // the variant the spec asks for (make_attention)
  FeedForward ffn_;
  LayerNorm ln_attn_, ln_ffn_;
  // Caches (B·T rows): the attention residual sum `a`, the FFN input `h` (post) or LN outputs (pre),
  // the FFN residual sum `f` (post), and the two LayerNorms' statistics.
  Buffer<float> a_, h_, f_, attn_in_, mean1_, rstd1_, mean2_, rstd2_;
  // Shared scratch (B·T rows × C): branch outputs and gradients; with query rows, the gradient of
  // the attention's residual sum at those rows.
  Buffer<float> branch_, d_branch_, d_mid_, d_rows_;
};

}  // namespace linformer

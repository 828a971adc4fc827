#pragma once
// FFN(x) = fc2(Dropout_act(GELU(fc1(x)))), exact (erf) GELU.

#include "linformer/layers/linear.h"
#include "linformer/layers/pass.h"
#include "linformer/nn/workspace.h"

namespace linformer {

class FeedForward {
 public:
  FeedForward(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_rows);
  // layers.{l}.ffn.fc1 (F, C) and .fc2 (C, F).
  static void declare(ParameterTable& table, const ModelSpec& spec, int layer);
  static double forward_flops(const ModelSpec& spec, double rows);

  // x (rows, C) -> y (rows, C); overwrites y and the caches.
  // x_rounded: the caller wrote x's bf16 rounding into input_bf16(rows) (one chunk only).
  // row_index (rows), when given: the rows are those rows of the layer (QueryRows), whose
  // activation dropout masks they take.
  void forward(TensorView<const float> x, TensorView<float> y, const Pass& pass, bool x_rounded = false,
               const int32_t* row_index = nullptr);
  // The bf16 path of a training workspace: fc1's bf16 input cache (rows, C), for the kernel that
  // makes x to write its rounding into; empty otherwise.
  TensorView<bf16> input_bf16(int64_t rows) const { return fc1_.input_bf16(rows); }
  // dy (rows, C) -> dx (rows, C), overwritten; parameter gradients accumulate.
  void backward(TensorView<const float> x, TensorView<const float> dy, TensorView<float> dx, const Pass& pass,
                const int32_t* row_index = nullptr);

 private:
  static std::string prefix(int layer) { return "layers." + std::to_string(layer) + ".ffn."; }

  const Workspace& ws_;
  int layer_;
  float activation_dropout_;
  Linear fc1_, fc2_;
  // Inference runs the rows in chunks of this many (one chunk when training): the (rows, F)
  // buffer is the largest of a block, and no later row needs an earlier row's.
  static constexpr int64_t kInferenceChunkRows = 2048;
  int64_t chunk_rows_;
  // Caches (chunk rows, F): fc1 output (in training then GELU's derivative at it), dropped GELU
  // output (fc2 input); one buffer in inference.
  Buffer<float> pre_, act_;
  Buffer<float> d_act_;  // shared scratch (rows, F)
  // The last forward wrote GELU's output in bf16 only, straight into fc2's input cache (bf16
  // path without activation dropout), so backward takes the same fused route.
  bool fused_bf16_ = false;
};

}  // namespace linformer

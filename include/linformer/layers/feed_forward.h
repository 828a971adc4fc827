#pragma once
// FFN(x) = fc2(Dropout_act(GELU(fc1(x)))), exact (erf) GELU.

#include "linformer/layers/linear.h"
#include "linformer/layers/pass.h"
#include "linformer/model/workspace.h"

namespace linformer {

class FeedForward {
 public:
  FeedForward(const ModelSpec& spec, const Parameters& params, Workspace& ws, int layer, int64_t max_rows);

  // x (rows, C) -> y (rows, C); overwrites y and the caches.
  void forward(TensorView<const float> x, TensorView<float> y, const Pass& pass);
  // dy (rows, C) -> dx (rows, C), overwritten; parameter gradients accumulate.
  void backward(TensorView<const float> x, TensorView<const float> dy, TensorView<float> dx, const Pass& pass);

 private:
  const Workspace& ws_;
  int layer_;
  float activation_dropout_;
  Linear fc1_, fc2_;
  int pre_, act_;  // caches (rows, F): fc1 output, dropped GELU output (fc2 input)
  int d_act_;      // shared scratch (rows, F)
};

}  // namespace linformer

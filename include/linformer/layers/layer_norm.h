#pragma once
// LayerNorm with learned scale and shift, over the last axis of (rows, C).

#include "linformer/core/tensor.h"
#include "linformer/kernels/bf16.h"
#include "linformer/nn/parameters.h"

namespace linformer {

struct LayerNorm {
  TensorView<float> gamma, beta, dgamma, dbeta;  // (C) each
  float eps = 1e-5f;

  LayerNorm() = default;
  LayerNorm(const Parameters& params, const std::string& name);
  // Its parameters: name.weight (C), ones; name.bias (C), zeros; neither decayed.
  static void declare(ParameterTable& table, const std::string& name, int64_t C);

  // y = LN(x); mean and rstd (rows) are the cache for backward. Overwrites y, mean, rstd, and
  // y_bf16 (y's rounding, the next matmul's bf16 operand) when given.
  void forward(TensorView<const float> x, TensorView<float> y, float* mean, float* rstd,
               TensorView<bf16> y_bf16 = {}) const;
  // Overwrites dx; accumulates dgamma, dbeta.
  void backward(TensorView<const float> dy, TensorView<const float> x, const float* mean, const float* rstd,
                TensorView<float> dx) const;
};

}  // namespace linformer

#pragma once
// y = x Wᵀ + b with W stored (out, in) like PyTorch's nn.Linear.

#include "linformer/core/tensor.h"
#include "linformer/kernels/matmul.h"
#include "linformer/nn/parameters.h"

namespace linformer {

struct Linear {
  TensorView<float> w, b;    // (out, in), (out)
  TensorView<float> dw, db;  // same shapes; gradients

  Linear() = default;
  Linear(const Parameters& params, const std::string& name);
  // Its parameters: name.weight (out, in), decayed, N(0, init_std); name.bias (out), zeros.
  static void declare(ParameterTable& table, const std::string& name, int64_t out, int64_t in);
  // Matmul FLOPs of forward over `rows` rows.
  static double forward_flops(double rows, double out, double in) { return 2 * rows * out * in; }
  int64_t in() const { return w.size(1); }
  int64_t out() const { return w.size(0); }

  // x (rows, in) -> y (rows, out). Overwrites y. With `with_bias` false the bias is left out.
  void forward(TensorView<const float> x, TensorView<float> y, bool with_bias = true) const;

  // In the forward pass: y = x Wᵀ + b. So dx = dy W (overwrites dx, skipped when dx is
  // empty or accumulates with dx_mode = add), dW += dyᵀ x, db += Σ_rows dy (when with_bias).
  void backward(TensorView<const float> dy, TensorView<const float> x, TensorView<float> dx,
                Accumulate dx_mode = Accumulate::overwrite, bool with_bias = true) const;
};

}  // namespace linformer

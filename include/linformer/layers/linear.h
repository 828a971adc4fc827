#pragma once
// y = x Wᵀ + b with W stored (out, in) like PyTorch's nn.Linear.

#include "linformer/core/tensor.h"
#include "linformer/kernels/matmul.h"
#include "linformer/nn/parameters.h"
#include "linformer/nn/workspace.h"

namespace linformer {

// Whether a matmul should read this bf16 copy of a weight: the matmuls take bf16 operands and
// the copy is kept (else the f32 weight, rounded by the matmul when the operands are bf16).
inline bool reads_bf16_copy(const TensorView<const bf16>& copy) {
  return copy.data() != nullptr && matmul_bf16_operands();
}

struct Linear {
  TensorView<float> w, b;         // (out, in), (out)
  TensorView<float> dw, db;       // same shapes; gradients
  TensorView<const bf16> w_bf16;  // (out, in): w's bf16 copy, when the parameters keep them

  Linear() = default;
  Linear(const Parameters& params, const std::string& name);
  // The bf16 path of a training workspace (the parameters keep bf16 copies): reserves a cache for
  // x's bf16 copy ("<name>.x_bf16"), written by forward and read by backward's dW, and a shared
  // scratch for dy's, so each is rounded once per pass; `rows` bounds x's rows. Otherwise reserves
  // nothing (the matmuls then round their f32 operands themselves).
  void reserve_bf16_operands(Workspace& ws, Dim rows);
  // Its parameters: name.weight (out, in), decayed, N(0, init_std); name.bias (out), zeros.
  static void declare(ParameterTable& table, const std::string& name, int64_t out, int64_t in);
  // Matmul FLOPs of forward over `rows` rows.
  static double forward_flops(double rows, double out, double in) { return 2 * rows * out * in; }
  int64_t in() const { return w.size(1); }
  int64_t out() const { return w.size(0); }

  // With bf16 matmul operands (train.precision = "bf16"), forward and backward read w_bf16
  // instead of rounding w on every call.
  // x (rows, in) -> y (rows, out). Overwrites y. With `with_bias` false the bias is left out.
  void forward(TensorView<const float> x, TensorView<float> y, bool with_bias = true) const;
  // The same with y written only rounded, for a y that feeds only bf16 products: x (contiguous)
  // goes through the bf16 caches, which this Linear must keep (keeps_bf16_caches()). y_bf16 as
  // forward_rounded takes it.
  void forward(TensorView<const float> x, TensorView<bf16> y_bf16) const;

  // In the forward pass: y = x Wᵀ + b. So dx = dy W (overwrites dx, skipped when dx is
  // empty or accumulates with dx_mode = add), dW += dyᵀ x, db += Σ_rows dy (when with_bias).
  void backward(TensorView<const float> dy, TensorView<const float> x, TensorView<float> dx,
                Accumulate dx_mode = Accumulate::overwrite, bool with_bias = true) const;

  // Fused producers on the bf16 path: a kernel that makes x writes its bf16 rounding straight
  // into input_bf16(rows), then forward_rounded(y) multiplies it (no f32 x needed, then or in
  // backward); a kernel that makes dy writes it and its rounding, output_gradient_bf16(rows),
  // then backward_rounded(dy, dx) (dy in f32 for the bias gradient). Both views are empty
  // (null data) unless this Linear keeps bf16 caches and the matmuls take bf16 operands.
  bool keeps_bf16_caches() const { return static_cast<bool>(x_bf16_); }
  TensorView<bf16> input_bf16(int64_t rows) const;
  void forward_rounded(TensorView<float> y, bool with_bias = true) const;
  // The same with y written only rounded (a bf16-result matmul, bias included). y_bf16 is
  // (rows, out), or (parts, rows, out / parts): the output's column blocks each in a dense block
  // of its own (full attention's Q, K, V), one product per block.
  void forward_rounded(TensorView<bf16> y_bf16) const;
  TensorView<bf16> output_gradient_bf16(int64_t rows) const;
  void backward_rounded(TensorView<const float> dy, TensorView<float> dx, Accumulate dx_mode = Accumulate::overwrite,
                        bool with_bias = true) const;
  // The same with dx written only rounded (a bf16-result matmul), for a dx that feeds only bf16
  // products.
  void backward_rounded(TensorView<const float> dy, TensorView<bf16> dx_bf16, bool with_bias = true) const;

 private:
  // True when x (contiguous) goes through the bf16 caches.
  bool caches_bf16(TensorView<const float> x) const;
  std::string name_;
  const Workspace* ws_ = nullptr;
  Buffer<bf16> x_bf16_;   // cache (rows, in)
  Buffer<bf16> dy_bf16_;  // shared scratch (rows, out)
};

}  // namespace linformer

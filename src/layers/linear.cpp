#include "linformer/layers/linear.h"

#include "linformer/kernels/reduce.h"

namespace linformer {

Linear::Linear(const Parameters& params, const std::string& name)
    : w(params.value(name + ".weight")),
      b(params.value(name + ".bias")),
      dw(params.grad(name + ".weight")),
      db(params.grad(name + ".bias")),
      w_bf16(params.value_bf16_if_kept(name + ".weight")),
      name_(name) {}

void Linear::declare(ParameterTable& table, const std::string& name, int64_t out, int64_t in) {
  table.add(name + ".weight", Shape{out, in}, Init::normal, true);
  table.add(name + ".bias", Shape{out}, Init::zeros, false);
}

void Linear::reserve_bf16_operands(Workspace& ws, Dim rows) {
  if (ws.inference() || w_bf16.data() == nullptr) return;
  ws_ = &ws;
  x_bf16_ = ws.reserve<bf16>(name_ + ".x_bf16", {rows, in()});
  dy_bf16_ = ws.reserve_backward<bf16>("linear.dy_bf16", {rows, out()});
}

bool Linear::caches_bf16(TensorView<const float> x) const {
  return x_bf16_ && x.is_contiguous() && matmul_bf16_operands();
}

TensorView<bf16> Linear::input_bf16(int64_t rows) const {
  return x_bf16_ && matmul_bf16_operands() ? ws_->view(x_bf16_, Extents::rows(rows)) : TensorView<bf16>();
}

TensorView<bf16> Linear::output_gradient_bf16(int64_t rows) const {
  return x_bf16_ && matmul_bf16_operands() ? ws_->view(dy_bf16_, Extents::rows(rows)) : TensorView<bf16>();
}

void Linear::forward_rounded(TensorView<float> y, bool with_bias) const {
  const TensorView<const bf16> x_bf16 = input_bf16(y.size(0));  // (rows, in), written by the caller
  LF_CHECK(x_bf16.data() != nullptr, "{}: forward from a bf16 input without bf16 caches", name_);
  matmul(x_bf16, w_bf16.transpose(0, 1), y, Accumulate::overwrite, with_bias ? b.data() : nullptr);
}

void Linear::forward_rounded(TensorView<bf16> y_bf16) const {
  const int64_t rows = y_bf16.size(y_bf16.rank() - 2);
  const TensorView<const bf16> x_bf16 = input_bf16(rows);  // (rows, in), written by the caller
  LF_CHECK(x_bf16.data() != nullptr, "{}: forward from a bf16 input without bf16 caches", name_);
  if (y_bf16.rank() == 2) {
    matmul(x_bf16, w_bf16.transpose(0, 1), y_bf16, b.data());
    return;
  }
  // (parts, rows, out / parts): one product per block of output columns, each into its own block.
  const int64_t parts = y_bf16.size(0), width = y_bf16.size(2);
  LF_CHECK(y_bf16.rank() == 3 && parts * width == out(), "{}: output blocks {} for {} outputs", name_,
           y_bf16.shape().str(), out());
  for (int64_t p = 0; p < parts; ++p)
    matmul(x_bf16, w_bf16.slice(0, p * width, (p + 1) * width).transpose(0, 1), y_bf16.select(0, p),
           b.data() + p * width);
}

void Linear::backward_rounded(TensorView<const float> dy, TensorView<float> dx, Accumulate dx_mode,
                              bool with_bias) const {
  const int64_t rows = dy.size(0);
  const TensorView<const bf16> x_bf16 = input_bf16(rows);             // (rows, in), from forward
  const TensorView<const bf16> dy_bf16 = output_gradient_bf16(rows);  // (rows, out), from the caller
  LF_CHECK(x_bf16.data() != nullptr, "{}: backward from a bf16 gradient without bf16 caches", name_);
  if (with_bias) add_column_sums(dy.data(), dy.size(0), dy.size(1), dy.stride(0), db.data());
  if (!dx.empty()) matmul(dy_bf16, w_bf16, dx, dx_mode);
  matmul(dy_bf16.transpose(0, 1), x_bf16, dw, Accumulate::add);
}

void Linear::backward_rounded(TensorView<const float> dy, TensorView<bf16> dx_bf16, bool with_bias) const {
  const int64_t rows = dy.size(0);
  const TensorView<const bf16> x_bf16 = input_bf16(rows);             // (rows, in), from forward
  const TensorView<const bf16> dy_bf16 = output_gradient_bf16(rows);  // (rows, out), from the caller
  LF_CHECK(x_bf16.data() != nullptr, "{}: backward from a bf16 gradient without bf16 caches", name_);
  if (with_bias) add_column_sums(dy.data(), dy.size(0), dy.size(1), dy.stride(0), db.data());
  matmul(dy_bf16, w_bf16, dx_bf16);
  matmul(dy_bf16.transpose(0, 1), x_bf16, dw, Accumulate::add);
}

void Linear::forward(TensorView<const float> x, TensorView<float> y, bool with_bias) const {
  const float* bias = with_bias ? b.data() : nullptr;
  if (caches_bf16(x)) {
    convert_to_bf16(x, input_bf16(x.size(0)).data());
    forward_rounded(y, with_bias);
  } else if (reads_bf16_copy(w_bf16)) {
    matmul(x, w_bf16.transpose(0, 1), y, Accumulate::overwrite, bias);
  } else {
    matmul(x, TensorView<const float>(w).transpose(0, 1), y, Accumulate::overwrite, bias);
  }
}

void Linear::forward(TensorView<const float> x, TensorView<bf16> y_bf16) const {
  LF_CHECK(caches_bf16(x), "{}: a bf16 output needs the bf16 caches and a contiguous input", name_);
  convert_to_bf16(x, input_bf16(x.size(0)).data());
  forward_rounded(y_bf16);
}

void Linear::backward(TensorView<const float> dy, TensorView<const float> x, TensorView<float> dx, Accumulate dx_mode,
                      bool with_bias) const {
  if (caches_bf16(x) && dy.stride(1) == 1) {  // rows of dy rounded into the (rows, out) scratch
    convert_to_bf16(dy, output_gradient_bf16(x.size(0)).data());
    backward_rounded(dy, dx, dx_mode, with_bias);
    return;
  }
  if (with_bias) add_column_sums(dy.data(), dy.size(0), dy.size(1), dy.stride(0), db.data());
  if (!dx.empty()) {
    if (reads_bf16_copy(w_bf16))
      matmul(dy, w_bf16, dx, dx_mode);
    else
      matmul(dy, w, dx, dx_mode);
  }
  matmul(dy.transpose(0, 1), x, dw, Accumulate::add);
}

}  // namespace linformer

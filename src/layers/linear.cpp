#include "linformer/layers/linear.h"

#include "linformer/kernels/reduce.h"

namespace linformer {

Linear::Linear(const Parameters& params, const std::string& name)
    : w(params.value(name + ".weight")),
      b(params.value(name + ".bias")),
      dw(params.grad(name + ".weight")),
      db(params.grad(name + ".bias")) {}

void Linear::declare(ParameterTable& table, const std::string& name, int64_t out, int64_t in) {
  table.add(name + ".weight", Shape{out, in}, Init::normal, true);
  table.add(name + ".bias", Shape{out}, Init::zeros, false);
}

void Linear::forward(TensorView<const float> x, TensorView<float> y, bool with_bias) const {
  matmul(x, TensorView<const float>(w).transpose(0, 1), y, Accumulate::overwrite, with_bias ? b.data() : nullptr);
}

void Linear::backward(TensorView<const float> dy, TensorView<const float> x, TensorView<float> dx, Accumulate dx_mode,
                      bool with_bias) const {
  if (!dx.empty()) matmul(dy, w, dx, dx_mode);
  matmul(dy.transpose(0, 1), x, dw, Accumulate::add);
  if (with_bias) add_column_sums(dy.data(), dy.size(0), dy.size(1), dy.stride(0), db.data());
}

}  // namespace linformer

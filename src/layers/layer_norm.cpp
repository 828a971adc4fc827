#include "linformer/layers/layer_norm.h"

#include "linformer/kernels/layer_norm_rows.h"

namespace linformer {

void LayerNorm::declare(ParameterTable& table, const std::string& name, int64_t C) {
  table.add(name + ".weight", Shape{C}, Init::ones, false);
  table.add(name + ".bias", Shape{C}, Init::zeros, false);
}

LayerNorm::LayerNorm(const Parameters& params, const std::string& name)
    : gamma(params.value(name + ".weight")),
      beta(params.value(name + ".bias")),
      dgamma(params.grad(name + ".weight")),
      dbeta(params.grad(name + ".bias")),
      eps(params.spec().layer_norm_eps) {}

void LayerNorm::forward(TensorView<const float> x, TensorView<float> y, float* mean, float* rstd,
                        TensorView<bf16> y_bf16) const {
  LF_CHECK(x.is_contiguous() && y.is_contiguous(), "layer norm needs contiguous rows");
  LF_CHECK(!y_bf16.data() || y_bf16.numel() == y.numel(), "layer norm: the bf16 output's size differs from y's");
  const int64_t C = gamma.numel();
  layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean, rstd, x.numel() / C, C, eps, y_bf16.data());
}

void LayerNorm::backward(TensorView<const float> dy, TensorView<const float> x, const float* mean, const float* rstd,
                         TensorView<float> dx) const {
  const int64_t C = gamma.numel();
  layer_norm_backward(dy.data(), x.data(), gamma.data(), mean, rstd, dx.data(), dgamma.data(), dbeta.data(),
                      x.numel() / C, C);
}

}  // namespace linformer

#include "linformer/optim/adamw.h"

#include "linformer/kernels/reduce.h"

#include <cmath>

namespace linformer {

namespace {
constexpr uint8_t kTrainable = 1, kDecay = 2;

std::vector<uint8_t> element_flags(const Parameters& params, bool decay_all) {
  std::vector<uint8_t> flags(params.values().numel(), 0);
  const auto& layout = params.values().layout();
  for (const auto& p : params.table()) {
    if (!p.trainable) continue;
    const uint8_t f = kTrainable | ((p.decay || decay_all) ? kDecay : 0);
    const size_t begin = layout.entry(layout.index_of(p.name)).offset;
    std::fill(flags.begin() + static_cast<std::ptrdiff_t>(begin),
              flags.begin() + static_cast<std::ptrdiff_t>(begin + static_cast<size_t>(p.shape.numel())), f);
  }
  return flags;
}
}  // namespace

AdamW::AdamW(Parameters& params, const config::OptimConfig& optim)
    : params_(params),
      optim_(optim),
      m_(params.values().layout()),
      v_(params.values().layout()),
      flags_(element_flags(params, optim.decay_bias_and_norm)) {}

void AdamW::reset() {
  m_.zero();
  v_.zero();
  steps_ = 0;
}

void AdamW::step(double lr) {
  ++steps_;
  const double b1 = optim_.adam_beta1, b2 = optim_.adam_beta2;
  const float beta1 = static_cast<float>(b1), beta2 = static_cast<float>(b2);
  const float correction1 = static_cast<float>(1.0 - std::pow(b1, static_cast<double>(steps_)));
  const float correction2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(b2, static_cast<double>(steps_))));
  const float step_size = static_cast<float>(lr) / correction1;
  const float decay = static_cast<float>(1.0 - lr * optim_.weight_decay);
  const float eps = static_cast<float>(optim_.adam_eps);
  float* p = params_.values().data();
  const float* g = params_.grads().data();
  float* m = m_.data();
  float* v = v_.data();
  const uint8_t* flags = flags_.data();
  const int64_t n = static_cast<int64_t>(flags_.size());
  // The bf16 copies of the values (the bf16 path's weight operands) are written in the same
  // pass; frozen elements never change, so their copies stay as they were made.
  bf16* copies = params_.bf16_copies();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    if (!(flags[i] & kTrainable)) continue;
    if (flags[i] & kDecay) p[i] *= decay;
    m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
    v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
    p[i] -= step_size * m[i] / (std::sqrt(v[i]) / correction2_sqrt + eps);
    if (copies) copies[i] = to_bf16(p[i]);
  }
}

double gradient_norm(const Parameters& params) {
  double sum = 0;
  for (const auto& p : params.table()) {
    if (!p.trainable) continue;
    const float* g = params.grad(p.name).data();
    sum += sum_in_thread_order(p.shape.numel(), [g](int64_t i) { return static_cast<double>(g[i]) * g[i]; });
  }
  return std::sqrt(sum);
}

void scale_gradients(const Parameters& params, float factor) {
  float* g = params.grads().data();
  const int64_t n = static_cast<int64_t>(params.grads().numel());
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) g[i] *= factor;
}

}  // namespace linformer

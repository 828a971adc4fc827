#include "linformer/layers/classification_head.h"

#include "linformer/kernels/activation.h"
#include "linformer/kernels/dropout.h"

#include <cstring>

namespace linformer {

void ClassificationHead::declare(ParameterTable& table, int64_t C, int64_t labels) {
  Linear::declare(table, "classifier.dense", C, C);
  Linear::declare(table, "classifier.out", labels, C);
}

ClassificationHead::ClassificationHead(const Parameters& params, Workspace& ws, int64_t max_batch, float dropout)
    : ws_(ws), dense_(params, "classifier.dense"), out_(params, "classifier.out"), dropout_(dropout) {
  const Dim B = Dim::batch(max_batch);
  const int64_t C = dense_.in();
  h_ = ws.reserve("classifier.h", {B, C});
  t_ = ws.reserve("classifier.t", {B, C});
  u_ = ws.reserve("classifier.u", {B, C});
  logits_ = ws.reserve("classifier.logits", {B, out_.out()});
  d_a_ = ws.reserve_backward("classifier.d_a", {B, C});
  d_b_ = ws.reserve_backward("classifier.d_b", {B, C});
}

TensorView<float> ClassificationHead::logits(int64_t B) const { return ws_.view(logits_, {B}); }

CrossEntropyResult ClassificationHead::forward(TensorView<const float> x, const int32_t* targets, float grad_scale,
                                               const Pass& pass) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  const Extents bc{B};
  const TensorView<float> h = ws_.view(h_, bc), t = ws_.view(t_, bc), u = ws_.view(u_, bc), logits = this->logits(B);
  for (int64_t b = 0; b < B; ++b) std::memcpy(h.data() + b * C, x.data() + b * T * C, sizeof(float) * C);
  dense_.forward(h, t);
  tanh_forward(t.data(), t.data(), t.numel());
  const float p = pass.training ? dropout_ : 0.0f;
  dropout_apply(t.data(), u.data(), u.numel(), p, pass.seed, dropout_stream(DropoutSite::classifier, 0, pass));
  out_.forward(u, logits);
  return cross_entropy(logits.data(), targets, B, out_.out(), grad_scale);
}

void ClassificationHead::backward(TensorView<float> dx, const Pass& pass) {
  const int64_t B = dx.size(0), T = dx.size(1), C = dx.size(2);
  const Extents bc{B};
  const TensorView<float> h = ws_.view(h_, bc), t = ws_.view(t_, bc), u = ws_.view(u_, bc), d_logits = logits(B);
  const TensorView<float> d_a = ws_.view(d_a_, bc), d_b = ws_.view(d_b_, bc);
  // logits = out(u): d_u = d_logits W_out, and out's parameter gradients.
  out_.backward(d_logits, u, d_a);
  // u = dropout(t): the same mask on the gradient; t = tanh(p): d_p = d_t (1 - t²).
  const float p = pass.training ? dropout_ : 0.0f;
  dropout_apply(d_a.data(), d_a.data(), d_a.numel(), p, pass.seed, dropout_stream(DropoutSite::classifier, 0, pass));
  tanh_backward(d_a.data(), t.data(), d_a.data(), d_a.numel());
  // p = dense(h): d_h, and dense's parameter gradients.
  dense_.backward(d_a, h, d_b);
  // h = x[:, 0]: every other position gets no gradient.
  std::memset(dx.data(), 0, sizeof(float) * static_cast<size_t>(dx.numel()));
  for (int64_t b = 0; b < B; ++b) std::memcpy(dx.data() + b * T * C, d_b.data() + b * C, sizeof(float) * C);
}

}  // namespace linformer

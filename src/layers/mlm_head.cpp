#include "linformer/layers/mlm_head.h"

#include "linformer/kernels/activation.h"
#include "linformer/kernels/reduce.h"

#include <cstring>

namespace linformer {

namespace {
// The products run on the masked rows rounded up to a multiple of this, the extra rows zero:
// the number of masked tokens changes from batch to batch, and every new count built (and kept)
// its own oneDNN primitives, hundreds over a run (RSS grew by 1-2 GB in a 20 M-token run).
constexpr int64_t kRowQuantum = 32;
int64_t padded_rows(int64_t M) { return (M + kRowQuantum - 1) / kRowQuantum * kRowQuantum; }
}  // namespace

void MlmHead::declare(ParameterTable& table, const ModelSpec& spec) {
  Linear::declare(table, "mlm_head.dense", spec.d_model, spec.d_model);
  LayerNorm::declare(table, "mlm_head.ln", spec.d_model);
  table.add("mlm_head.bias", Shape{spec.vocab_size}, Init::zeros, false);
}

double MlmHead::forward_flops(const ModelSpec& spec, double M) {
  return Linear::forward_flops(M, spec.d_model, spec.d_model) + Linear::forward_flops(M, spec.vocab_size, spec.d_model);
}

MlmHead::MlmHead(const ModelSpec& spec, const Parameters& params, Workspace& ws, int64_t max_masked)
    : spec_(spec),
      ws_(ws),
      dense_(params, "mlm_head.dense"),
      ln_(params, "mlm_head.ln"),
      tokens_(params.value("embed.tokens")),
      d_tokens_(params.grad("embed.tokens")),
      bias_(params.value("mlm_head.bias")),
      d_bias_(params.grad("mlm_head.bias")),
      tokens_bf16_(params.value_bf16_if_kept("embed.tokens")) {
  // A row per masked token, M = N of the call, padded up to a multiple of kRowQuantum.
  const Dim M = Dim::rows(padded_rows(max_masked));
  const int64_t C = spec.d_model;
  z_ = ws.reserve("head.z", {M, C});
  pre_ = ws.reserve("head.pre", {M, C});
  act_ = ws.reserve("head.act", {M, C});
  out_ = ws.reserve("head.out", {M, C});
  mean_ = ws.reserve("head.mean", {M});
  rstd_ = ws.reserve("head.rstd", {M});
  logits_ = ws.reserve("head.logits", {M, spec.vocab_size});
  d_a_ = ws.reserve_backward("head.d_a", {M, C});
  d_b_ = ws.reserve_backward("head.d_b", {M, C});
  dense_.reserve_bf16_operands(ws, M);
  // bf16 path: the logits' gradient, the largest operand of the step, rounded once for both products.
  // The cross-entropy writes it (forward with a gradient scale, which forward_backward always follows
  // with backward), and adds the output bias's gradient in the same pass.
  if (tokens_bf16_.data() != nullptr)
    d_logits_bf16_ = ws.reserve_backward<bf16>("head.d_logits_bf16", {M, spec.vocab_size});
}

TensorView<float> MlmHead::logits(int64_t M) const { return ws_.view(logits_, Extents::rows(M)); }

CrossEntropyResult MlmHead::forward(TensorView<const float> x, const int32_t* positions, const int32_t* targets,
                                    int64_t M, float grad_scale) {
  const int64_t C = spec_.d_model, V = spec_.vocab_size, Mp = padded_rows(M);
  const Extents mc = Extents::rows(Mp);  // rows M..Mp-1: zero inputs, ignored outputs
  const TensorView<float> z = ws_.view(z_, mc), pre = ws_.view(pre_, mc), act = ws_.view(act_, mc);
  const TensorView<float> out = ws_.view(out_, mc), logits = ws_.view(logits_, mc);
  gather_rows(x.data(), positions, z.data(), M, C);
  std::memset(z.data() + M * C, 0, sizeof(float) * static_cast<size_t>((Mp - M) * C));
  dense_.forward(z, pre);
  gelu_forward_keeping_derivative(pre.data(), act.data(), act.numel());  // pre: then GELU's derivative
  ln_.forward(act, out, ws_.view(mean_, mc).data(), ws_.view(rstd_, mc).data());
  if (reads_bf16_copy(tokens_bf16_))
    matmul(out, tokens_bf16_.transpose(0, 1), logits, Accumulate::overwrite, bias_.data());
  else
    matmul(out, TensorView<const float>(tokens_).transpose(0, 1), logits, Accumulate::overwrite, bias_.data());
  // The padding rows' gradient is zero, so they add nothing to the parameters' gradients.
  gradient_in_bf16_ = grad_scale != 0 && d_logits_bf16_ && reads_bf16_copy(tokens_bf16_);
  if (gradient_in_bf16_) {  // d_logits only rounded (both products read it so); d_bias += its column sums
    const TensorView<bf16> d_logits_bf16 = ws_.view(d_logits_bf16_, mc);
    const CrossEntropyResult result =
        cross_entropy_bf16_gradient(logits.data(), targets, M, V, grad_scale, d_logits_bf16.data(), d_bias_.data());
    std::fill(d_logits_bf16.data() + M * V, d_logits_bf16.data() + Mp * V, to_bf16(0.0f));
    return result;
  }
  const CrossEntropyResult result = cross_entropy(logits.data(), targets, M, V, grad_scale);
  if (grad_scale != 0) std::memset(logits.data() + M * V, 0, sizeof(float) * static_cast<size_t>((Mp - M) * V));
  return result;
}

void MlmHead::backward(TensorView<float> dx, const int32_t* positions, int64_t M) {
  const int64_t C = spec_.d_model;
  const Extents mc = Extents::rows(padded_rows(M));
  const TensorView<float> z = ws_.view(z_, mc), gelu_derivative = ws_.view(pre_, mc), act = ws_.view(act_, mc);
  const TensorView<float> out = ws_.view(out_, mc), d_logits = ws_.view(logits_, mc);
  const TensorView<float> d_a = ws_.view(d_a_, mc), d_b = ws_.view(d_b_, mc);
  // In the forward pass: logits = out tokensᵀ + bias. So d_out = d_logits tokens,
  // d_tokens += d_logitsᵀ out, d_bias += Σ_rows d_logits.
  if (gradient_in_bf16_) {  // d_logits (rounded) and d_bias from forward's cross-entropy
    const TensorView<const bf16> d_logits_bf16 = ws_.view(d_logits_bf16_, mc);
    matmul(d_logits_bf16, tokens_bf16_, d_a);
    matmul(d_logits_bf16.transpose(0, 1), out, d_tokens_, Accumulate::add);
  } else {
    add_column_sums(d_logits.data(), M, d_logits.size(1), d_logits.size(1), d_bias_.data());
    matmul(d_logits, tokens_, d_a);
    matmul(d_logits.transpose(0, 1), out, d_tokens_, Accumulate::add);
  }
  // out = LN(act), act = GELU(pre), pre = dense(z); pre's cache holds GELU's derivative at pre.
  ln_.backward(d_a, act, ws_.view(mean_, mc).data(), ws_.view(rstd_, mc).data(), d_b);
  gelu_backward(d_b.data(), gelu_derivative.data(), d_b.data(), d_b.numel());
  dense_.backward(d_b, z, d_a);
  // z = x[positions]: scatter back into a zeroed dx.
  std::memset(dx.data(), 0, sizeof(float) * static_cast<size_t>(dx.numel()));
  scatter_add_rows(d_a.data(), positions, dx.data(), M, C);
}

}  // namespace linformer

#include "linformer/layers/embedding.h"

#include "linformer/kernels/dropout.h"
#include "linformer/kernels/reduce.h"

namespace linformer {

void Embedding::declare(ParameterTable& table, const ModelSpec& spec) {
  table.add("embed.tokens", Shape{spec.vocab_size, spec.d_model}, Init::embedding, true);
  const bool learned = spec.positions == config::PositionKind::learned;
  table.add("embed.positions", Shape{spec.seq_len, spec.d_model}, learned ? Init::normal : Init::sinusoidal, true,
            learned);
  LayerNorm::declare(table, "embed.ln", spec.d_model);
}

Embedding::Embedding(const ModelSpec& spec, const Parameters& params, Workspace& ws, int64_t max_batch)
    : spec_(spec),
      ws_(ws),
      tokens_(params.value("embed.tokens")),
      positions_(params.value("embed.positions")),
      d_tokens_(params.grad("embed.tokens")),
      d_positions_(params.grad("embed.positions")),
      ln_(params, "embed.ln") {
  // (rows, C) and (rows), rows = B·T of the batch.
  const Dim rows = Dim::rows(max_batch * spec.seq_len);
  if (!ws.inference()) sum_ = ws.reserve("embed.sum", {rows, spec.d_model});
  mean_ = ws.reserve("embed.mean", {rows});
  rstd_ = ws.reserve("embed.rstd", {rows});
  d_sum_ = ws.reserve_backward("embed.d_sum", {rows, spec.d_model});
}

bool Embedding::forward(const BatchGeometry& g, const int32_t* ids, TensorView<float> y, const Pass& pass,
                        TensorView<bf16> y_bf16) {
  const int64_t C = spec_.d_model, rows = g.rows();
  const Extents r = Extents::rows(rows);
  // Inference keeps no sum for backward: it is normalised in place in y.
  const TensorView<float> sum = ws_.inference() ? y.reshape(Shape{rows, C}) : ws_.view(sum_, r);
  const float* tok = tokens_.data();
  const float* pos = positions_.data();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* e = tok + static_cast<int64_t>(ids[r]) * C;
    const float* p = pos + (r % g.T) * C;
    float* s = sum.data() + r * C;
    for (int64_t c = 0; c < C; ++c) s[c] = e[c] + p[c];
  }
  const auto y2 = y.reshape(Shape{rows, C});
  const bool dropout = pass.training && spec_.dropout > 0;
  const TensorView<bf16> rounded = dropout ? TensorView<bf16>{} : y_bf16;  // y is the LayerNorm's output
  ln_.forward(sum, y2, ws_.view(mean_, r).data(), ws_.view(rstd_, r).data(), rounded);
  if (dropout)
    dropout_apply(y2.data(), y2.data(), y2.numel(), spec_.dropout, pass.seed,
                  dropout_stream(DropoutSite::embedding, 0, pass));
  return rounded.data() != nullptr;
}

void Embedding::backward(const BatchGeometry& g, const int32_t* ids, TensorView<float> dy, const Pass& pass) {
  const int64_t C = spec_.d_model, rows = g.rows();
  const Extents r = Extents::rows(rows);
  const auto dy2 = dy.reshape(Shape{rows, C});
  if (pass.training)
    dropout_apply(dy2.data(), dy2.data(), dy2.numel(), spec_.dropout, pass.seed,
                  dropout_stream(DropoutSite::embedding, 0, pass));
  const TensorView<float> d_sum = ws_.view(d_sum_, r);
  ln_.backward(dy2, ws_.view(sum_, r), ws_.view(mean_, r).data(), ws_.view(rstd_, r).data(), d_sum);
  // In the forward pass: sum[b, t] = tokens[ids[b, t]] + positions[t].
  scatter_add_rows(d_sum.data(), ids, d_tokens_.data(), rows, C);
  if (spec_.positions != config::PositionKind::learned) return;  // fixed sinusoids
  for (int64_t b = 0; b < g.B; ++b) {
    float* dp = d_positions_.data();
    const float* ds = d_sum.data() + b * g.T * C;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < g.T * C; ++i) dp[i] += ds[i];
  }
}

}  // namespace linformer

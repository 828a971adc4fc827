// Each Linformer compression operator (layers/compression.h) against its definition in the README's
// "The model", computed here in double precision with plain loops, on a batch shorter than n with a
// padded row: linear E[:, :T] Y (shared, and per head), mean and max pooling over windows of
// s = n / K positions (max over the real rows only), conv filters (shared, and per head). Backward:
// d_part is Pᵀ d_out (the adjoint identity <P(part), d_out> = <part, Pᵀ d_out>; for max, each
// window's gradient at its first maximum) and the parameter gradient is Σ d_out partᵀ.

#include "linformer/layers/compression.h"
#include "linformer/core/rng.h"
#include "linformer/layers/attention.h"
#include "linformer/model/mlm_model.h"
#include "model_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace linformer {
namespace {

class CompressionKinds : public ::testing::TestWithParam<const char*> {};

TEST_P(CompressionKinds, ForwardAndBackwardFollowTheDefinition) {
  const ModelSpec spec = testing::tiny_spec(nlohmann::json::parse(GetParam()));  // n 16, K 4, C 16, H 2
  const Parameters params(spec, MlmModel::parameter_table(spec));
  const std::string name = Attention::projection_names(spec, 0).e;
  Rng rng(7);
  if (!name.empty()) {  // off the conv filter's mean-pooling init, into values no shortcut shares
    const TensorView<float> v = params.value(name);
    for (int64_t i = 0; i < v.numel(); ++i) v.data()[i] = rng.normal();
  }
  Workspace ws;
  const Compression P(spec, params, name, ws, 0, 2, /*bf16_scratch=*/false);
  const int64_t B = 2, T = 14, K = spec.k_per_layer[0], n = spec.seq_len, C = spec.d_model, D = spec.head_dim();
  const int64_t s = n / K;
  const std::vector<int32_t> lengths{14, 9};
  const BatchGeometry g{B, T, lengths.data()};
  std::vector<float> part(B * T * C), out(B * K * C), d_out(B * K * C), d_part(B * T * C);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < lengths[b]; ++t)
      for (int64_t c = 0; c < C; ++c) part[(b * T + t) * C + c] = rng.normal();  // padded rows stay zero
  for (float& d : d_out) d = rng.normal();
  const TensorView<float> part_v(part.data(), Shape{B, T, C}), out_v(out.data(), Shape{B, K, C});
  P.forward(g, part_v, out_v);
  params.zero_grads();
  P.backward(g, TensorView<const float>(d_out.data(), Shape{B, K, C}), part_v,
             TensorView<float>(d_part.data(), Shape{B, T, C}), Accumulate::overwrite);

  const auto kind = spec.projection;
  const bool per_head = spec.sharing == config::Sharing::none;
  const float* w = name.empty() ? nullptr : params.value(name).data();
  const auto at = [&](int64_t b, int64_t t, int64_t c) { return static_cast<double>(part[(b * T + t) * C + c]); };
  double adjoint_out = 0, adjoint_in = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < K; ++j)
      for (int64_t c = 0; c < C; ++c) {
        const int64_t h = per_head ? c / D : 0, begin = j * s, end = std::min(begin + s, T);
        double want = 0;
        if (kind == config::ProjectionKind::linear) {
          for (int64_t t = 0; t < T; ++t) want += static_cast<double>(w[(h * K + j) * n + t]) * at(b, t, c);
        } else if (kind == config::ProjectionKind::mean) {
          for (int64_t t = begin; t < end; ++t) want += at(b, t, c) / static_cast<double>(s);
        } else if (kind == config::ProjectionKind::conv) {
          for (int64_t t = begin; t < end; ++t) want += static_cast<double>(w[h * s + t - begin]) * at(b, t, c);
        } else {  // max over the window's real rows, 0 for none; the gradient goes to the first maximum
          const int64_t real_end = std::min<int64_t>(end, lengths[b]);
          if (begin < real_end) {
            int64_t arg = begin;
            for (int64_t t = begin; t < real_end; ++t)
              if (at(b, t, c) > at(b, arg, c)) arg = t;
            want = at(b, arg, c);
            EXPECT_EQ(d_part[(b * T + arg) * C + c], d_out[(b * K + j) * C + c])
                << "max's gradient at " << b << "," << j;
          }
        }
        EXPECT_NEAR(out[(b * K + j) * C + c], want, 1e-5 * (1 + std::abs(want)))
            << "b " << b << " j " << j << " c " << c;
        adjoint_out += want * d_out[(b * K + j) * C + c];
      }
  for (int64_t i = 0; i < B * T * C; ++i) adjoint_in += static_cast<double>(part[i]) * d_part[i];
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = lengths[b]; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) EXPECT_EQ(d_part[(b * T + t) * C + c], 0.0f) << "padded row " << t;
  EXPECT_NEAR(adjoint_in, adjoint_out, 1e-5 * (1 + std::abs(adjoint_out))) << "d_part is not Pᵀ d_out";

  if (name.empty()) return;  // pooling: no parameters
  // dE[h, j, t] = Σ_b Σ_{c of head h} d_out[b, j, c] part[b, t, c]; dw[h, r] the same over windows.
  const TensorView<float> grad = params.grad(name);
  const int64_t heads = per_head ? spec.heads : 1, width = per_head ? D : C;
  for (int64_t h = 0; h < heads; ++h) {
    const auto dot = [&](int64_t j, int64_t t) {
      double sum = 0;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t c = h * width; c < (h + 1) * width; ++c)
          sum += static_cast<double>(d_out[(b * K + j) * C + c]) * at(b, t, c);
      return sum;
    };
    if (kind == config::ProjectionKind::linear) {
      for (int64_t j = 0; j < K; ++j)
        for (int64_t t = 0; t < n; ++t) {
          const double want = t < T ? dot(j, t) : 0.0;
          EXPECT_NEAR(grad.data()[(h * K + j) * n + t], want, 1e-5 * (1 + std::abs(want))) << "dE " << j << "," << t;
        }
    } else {
      for (int64_t r = 0; r < s; ++r) {
        double want = 0;
        for (int64_t j = 0; j < K; ++j)
          if (j * s + r < T) want += dot(j, j * s + r);
        EXPECT_NEAR(grad.data()[h * s + r], want, 1e-5 * (1 + std::abs(want))) << "dw " << r;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryKind, CompressionKinds,
                         ::testing::Values(R"({"projection": "linear", "sharing": "headwise"})",
                                           R"({"projection": "linear", "sharing": "none"})",
                                           R"({"projection": "mean"})", R"({"projection": "max"})",
                                           R"({"projection": "conv", "sharing": "headwise"})",
                                           R"({"projection": "conv", "sharing": "none"})"));

}  // namespace
}  // namespace linformer

// The model with bf16 matmul operands (train.precision = "bf16"): the layers read the weights'
// bf16 copies, which must give exactly what rounding the f32 weights in every matmul gives, and
// the whole pass stays close to fp32. Needs avx512_bf16 (skipped elsewhere, saying so).

#include "linformer/kernels/context.h"
#include "linformer/kernels/matmul.h"
#include "linformer/layers/linear.h"
#include "model_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace linformer {
namespace {

using testing::OwnedBatch;

// Switches the matmuls to bf16 operands for a scope.
struct Bf16Operands {
  explicit Bf16Operands(bool on = true) { set_matmul_bf16_operands(on); }
  ~Bf16Operands() { set_matmul_bf16_operands(false); }
};

struct PassResult {
  double loss = 0;
  std::vector<float> grads;
};

PassResult forward_backward(MlmModel& model, const OwnedBatch& batch) {
  model.params().zero_grads();
  const auto r = model.forward_backward(batch.view(), Pass{true, 7, 1}, 1.0f);  // dropout on, where the spec has it
  const auto& g = model.params().grads();
  return {r.loss_sum, std::vector<float>(g.data(), g.data() + g.numel())};
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// Linear on the bf16 path against what its products must give: f32 sums of exact products of
// the bf16-rounded operands, and backward's dW from the input as forward rounded it.
TEST(Bf16Linear, MatchesTheRoundedProductsAndBackwardReadsTheInputForwardRounded) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "no avx512_bf16 on this CPU (" << dnnl_cpu_isa_name() << ")";
  const Bf16Operands on;
  const int64_t rows = 7, in = 12, out = 9;
  ParameterTable table;
  Linear::declare(table, "fc", out, in);
  Parameters params(testing::tiny_spec(), table);
  ASSERT_NE(params.bf16_copies(), nullptr);
  params.initialize(2);
  Linear fc(params, "fc");
  Workspace ws;
  fc.reserve_bf16_operands(ws, Dim::rows(rows));
  ws.allocate();
  ASSERT_GT(ws.planned_bytes(), 0u) << "no bf16 caches reserved";

  Rng rng(3);
  std::vector<float> x(rows * in), dy(rows * out), y(rows * out), dx(rows * in);
  for (auto& v : x) v = rng.normal();
  for (auto& v : dy) v = rng.normal();
  fc.forward(TensorView<const float>(x.data(), Shape{rows, in}), TensorView<float>(y.data(), Shape{rows, out}));
  const std::vector<float> x_forward = x;
  for (auto& v : x) v = 2 * v + 1;  // backward gets another x: the cached rounding of the first must be used
  fc.backward(TensorView<const float>(dy.data(), Shape{rows, out}), TensorView<const float>(x.data(), Shape{rows, in}),
              TensorView<float>(dx.data(), Shape{rows, in}));

  auto r = [](float v) { return static_cast<double>(to_float(to_bf16(v))); };
  const float* w = fc.w.data();
  const float* bias = fc.b.data();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t o = 0; o < out; ++o) {
      double ref = bias[o], magnitude = 0;
      for (int64_t p = 0; p < in; ++p) {
        ref += r(x_forward[i * in + p]) * r(w[o * in + p]);
        magnitude += std::abs(r(x_forward[i * in + p]) * r(w[o * in + p]));
      }
      ASSERT_NEAR(y[i * out + o], ref, 1e-6 * magnitude + 1e-6) << "y " << i << "," << o;
    }
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t p = 0; p < in; ++p) {
      double ref = 0, magnitude = 0;
      for (int64_t o = 0; o < out; ++o) {
        ref += r(dy[i * out + o]) * r(w[o * in + p]);
        magnitude += std::abs(r(dy[i * out + o]) * r(w[o * in + p]));
      }
      ASSERT_NEAR(dx[i * in + p], ref, 1e-6 * magnitude + 1e-6) << "dx " << i << "," << p;
    }
  int differs_from_new_x = 0;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t p = 0; p < in; ++p) {
      double ref = 0, with_new_x = 0, magnitude = 0;
      for (int64_t i = 0; i < rows; ++i) {
        ref += r(dy[i * out + o]) * r(x_forward[i * in + p]);
        with_new_x += r(dy[i * out + o]) * r(x[i * in + p]);
        magnitude += std::abs(r(dy[i * out + o]) * r(x_forward[i * in + p]));
      }
      const float got = fc.dw.data()[o * in + p];
      ASSERT_NEAR(got, ref, 1e-6 * magnitude + 1e-6) << "dW " << o << "," << p;
      differs_from_new_x += std::abs(got - with_new_x) > 1e-3;
    }
  EXPECT_GT(differs_from_new_x, out * in / 2);
}

// A bf16-result forward into column blocks (full attention's Q, K, V, each a dense block of its
// own): block p holds output columns [p·out/3, (p+1)·out/3) of every row, the rounding of the
// rounded operands' product plus the bias.
TEST(Bf16Linear, WritesItsOutputInDenseColumnBlocksWhenAskedTo) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "no avx512_bf16 on this CPU (" << dnnl_cpu_isa_name() << ")";
  const Bf16Operands on;
  const int64_t rows = 7, in = 12, out = 9, parts = 3, width = out / parts;
  ParameterTable table;
  Linear::declare(table, "fc", out, in);
  Parameters params(testing::tiny_spec(), table);
  params.initialize(2);
  Rng rng(4);
  for (int64_t o = 0; o < out; ++o) params.value("fc.bias").data()[o] = rng.normal();
  params.values_changed();
  Linear fc(params, "fc");
  Workspace ws;
  fc.reserve_bf16_operands(ws, Dim::rows(rows));
  ws.allocate();
  std::vector<float> x(rows * in);
  for (auto& v : x) v = rng.normal();
  std::vector<bf16> blocks(rows * out);
  fc.forward(TensorView<const float>(x.data(), Shape{rows, in}),
             TensorView<bf16>(blocks.data(), Shape{parts, rows, width}));

  auto r = [](float v) { return static_cast<double>(to_float(to_bf16(v))); };
  for (int64_t p = 0; p < parts; ++p)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t c = 0; c < width; ++c) {
        const int64_t o = p * width + c;
        double ref = fc.b.data()[o], magnitude = std::abs(ref);
        for (int64_t k = 0; k < in; ++k) {
          ref += r(x[i * in + k]) * r(fc.w.data()[o * in + k]);
          magnitude += std::abs(r(x[i * in + k]) * r(fc.w.data()[o * in + k]));
        }
        // One bf16 rounding of the f32 result: within half a bf16 unit (2^-8 relative) and the sums' error.
        ASSERT_NEAR(to_float(blocks[(p * rows + i) * width + c]), ref, std::abs(ref) / 256 + 1e-6 * magnitude + 1e-6)
            << "block " << p << " row " << i << " column " << c;
      }
  EXPECT_THROW(fc.forward(TensorView<const float>(x.data(), Shape{rows, in}),
                          TensorView<bf16>(blocks.data(), Shape{2, rows, 4})),
               Error);
}

class Bf16Model : public ::testing::TestWithParam<const char*> {};

TEST_P(Bf16Model, WeightCopiesGiveWhatRoundingTheWeightsGivesInTrainingAndInferenceAndStayCloseToFp32) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "no avx512_bf16 on this CPU (" << dnnl_cpu_isa_name() << ")";
  const ModelSpec spec = testing::tiny_spec(nlohmann::json::parse(GetParam()));
  const OwnedBatch batch = testing::random_batch(16, {16, 11, 7}, spec.vocab_size, 5);

  MlmModel fp32(spec, 3, 48);  // built with f32 operands: keeps no bf16 copies
  fp32.params().initialize(9);
  ASSERT_EQ(fp32.params().bf16_copies(), nullptr);
  const PassResult exact = forward_backward(fp32, batch);

  const Bf16Operands on;
  MlmModel with_copies(spec, 3, 48);
  ASSERT_NE(with_copies.params().bf16_copies(), nullptr) << "a model built for bf16 operands keeps no weight copies";
  with_copies.params().initialize(9);
  const PassResult copies = forward_backward(with_copies, batch);
  const PassResult rounding = forward_backward(fp32, batch);  // bf16 operands, weights rounded in each matmul

  // The copies are the rounded weights, so both paths feed the same kernels the same operands.
  EXPECT_EQ(copies.loss, rounding.loss);
  EXPECT_EQ(0, std::memcmp(copies.grads.data(), rounding.grads.data(), copies.grads.size() * sizeof(float)));
  // bf16 really ran (the pass differs from fp32) and stays close to it.
  EXPECT_NE(copies.loss, exact.loss);
  EXPECT_NEAR(copies.loss / exact.loss, 1.0, 0.01);
  EXPECT_GT(cosine(copies.grads, exact.grads), 0.999);
  // Rows without padding: compress-first Linformer then rounds x once into a cache for the Q
  // projection, both compressions and their backward, and dQ once for its two products.
  const OwnedBatch full = testing::random_batch(16, {16, 16, 16}, spec.vocab_size, 6);
  const PassResult full_copies = forward_backward(with_copies, full);
  const PassResult full_rounding = forward_backward(fp32, full);
  EXPECT_EQ(full_copies.loss, full_rounding.loss);
  EXPECT_EQ(
      0, std::memcmp(full_copies.grads.data(), full_rounding.grads.data(), full_copies.grads.size() * sizeof(float)));

  // An inference model (its own workspace plan, bf16 caches shared by the layers, the scores kept
  // only in bf16 and their softmax in place) gives the same.
  MlmModel inference(spec, 3, 48, WorkspaceUse::inference);
  inference.params().initialize(9);
  EXPECT_EQ(inference.forward(batch.view(), Pass{}).loss_sum, with_copies.forward(batch.view(), Pass{}).loss_sum);

  // The copies are what the layers read: zeroed, they change the pass; refreshed from the values
  // (values_changed()), they give it back.
  bf16* kept = with_copies.params().bf16_copies();
  std::fill(kept, kept + with_copies.params().values().numel(), to_bf16(0.0f));
  EXPECT_NE(forward_backward(with_copies, batch).loss, copies.loss);
  with_copies.params().values_changed();
  EXPECT_EQ(forward_backward(with_copies, batch).loss, copies.loss);
}

// bf16 inference keeps the n × n scores only in bf16 (2 bytes each, where fp32 keeps 4): with
// them dominating (full attention, n = 2048), it needs less activation memory than fp32.
TEST(Bf16Inference, KeepsFullAttentionsScoresInBf16OnlyAndNeedsLessMemoryThanFp32) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "no avx512_bf16 on this CPU (" << dnnl_cpu_isa_name() << ")";
  const int64_t n = 2048;
  const ModelSpec spec = testing::tiny_spec({{"attention", "full"},
                                             {"k_per_layer", nlohmann::json::array()},
                                             {"seq_len", n},
                                             {"d_model", 64},
                                             {"heads", 4},
                                             {"ffn_dim", 128}});
  const size_t fp32 = MlmModel::planned_activation_bytes(spec, 1, 1, WorkspaceUse::inference);
  size_t bf16_bytes = 0;
  {
    const Bf16Operands on;
    bf16_bytes = MlmModel::planned_activation_bytes(spec, 1, 1, WorkspaceUse::inference);
  }
  const double scores_f32 = 4.0 * spec.heads * n * n;  // one layer's (H, n, n) f32 scores: shared by the layers
  EXPECT_GT(static_cast<double>(fp32), scores_f32);
  // fp32 keeps the f32 scores; bf16 half as many bytes for them, plus small bf16 copies of Q, K, V.
  EXPECT_LT(static_cast<double>(bf16_bytes), static_cast<double>(fp32) - 0.45 * scores_f32)
      << "bf16 " << bf16_bytes << " bytes, fp32 " << fp32;
}

// bf16 training keeps P only as its bf16 rounding (the P·V operand and what the softmax backward
// reads) and dP only in bf16: each layer's (B, H, n, n) f32 probabilities and the shared f32 dP
// are not kept, unless attention dropout needs them in f32; with them dominating (full attention,
// n = 1024), half of fp32's memory for them.
TEST(Bf16Training, KeepsAttentionProbabilitiesOnlyInBf16WithoutAttentionDropout) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "no avx512_bf16 on this CPU (" << dnnl_cpu_isa_name() << ")";
  const int64_t n = 1024, batch = 2;
  const auto bytes = [&](double attention_dropout, bool bf16) {
    const ModelSpec spec = testing::tiny_spec({{"attention", "full"},
                                               {"k_per_layer", nlohmann::json::array()},
                                               {"seq_len", n},
                                               {"d_model", 64},
                                               {"heads", 4},
                                               {"ffn_dim", 128},
                                               {"attention_dropout", attention_dropout}});
    const Bf16Operands operands(bf16);
    return static_cast<double>(MlmModel::planned_activation_bytes(spec, batch, 8, WorkspaceUse::training));
  };
  const ModelSpec spec = testing::tiny_spec({});
  const double dp_f32 = 4.0 * batch * 4 * n * n;  // one (B, H, n, n) f32 buffer: dP, shared by the layers
  const double probs_f32 = dp_f32 * spec.layers;  // every layer's f32 P
  const double probs_bf16 = probs_f32 / 2;
  // fp32 keeps f32 P and dP; bf16 their roundings instead (and small bf16 copies of Q, K, V).
  EXPECT_LT(bytes(0.0, true), bytes(0.0, false) - 0.45 * (probs_f32 + dp_f32)) << "bf16 keeps f32 P or dP";
  // With attention dropout both keep f32 P and the dropped P; bf16 its rounding on top.
  EXPECT_GT(bytes(0.1, true), bytes(0.1, false) + 0.95 * probs_bf16);
  // bf16 without attention dropout trains (loss as the f32-operand path, which keeps f32 P, gives:
  // Variants/Bf16Model); a model built for it refuses f32 matmuls rather than read a missing buffer.
  const ModelSpec full = testing::tiny_spec({{"attention", "full"}, {"k_per_layer", nlohmann::json::array()}});
  std::optional<MlmModel> model;
  {
    const Bf16Operands on;
    model.emplace(full, 3, 48);
  }
  model->params().initialize(9);
  const OwnedBatch data = testing::random_batch(16, {16, 11, 7}, full.vocab_size, 5);
  try {
    forward_backward(*model, data);
    ADD_FAILURE() << "a model built for bf16 training ran with f32 matmuls";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("built for bf16 training, run with f32 matmuls"), std::string::npos)
        << e.what();
  }
}

// Linformer (projections and in_proj slices), full attention, pre-LN, no sharing; and with every
// dropout on (the feed-forward then rounds GELU's output in a pass of its own, not in GELU).
INSTANTIATE_TEST_SUITE_P(Variants, Bf16Model,
                         ::testing::Values(R"({})", R"({"attention": "full", "k_per_layer": []})",
                                           R"({"norm": "pre", "sharing": "none"})",
                                           R"({"dropout": 0.1, "attention_dropout": 0.1, "activation_dropout": 0.1})"));

}  // namespace
}  // namespace linformer

// The last block of a masked-LM training pass computes its output only at the masked tokens
// (MlmModel::forward_backward, QueryRows): the loss and every gradient must be what computing every
// row gives, in fp32 and on the bf16 path, post- and pre-LN, with and without padded rows, with
// and without a local band. The PyTorch parity test (torch_parity_test.cpp) checks the same pass
// against an independent model.

#include "linformer/kernels/context.h"
#include "linformer/kernels/matmul.h"
#include "model_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace linformer {
namespace {

using testing::OwnedBatch;

struct PassResult {
  double loss = 0;
  int64_t last_rows = 0;
  std::vector<float> grads;
};

PassResult forward_backward(MlmModel& model, const OwnedBatch& batch, const Pass& pass) {
  model.params().zero_grads();
  const auto r = model.forward_backward(batch.view(), pass, 1.0f / static_cast<float>(batch.masked_positions.size()));
  const auto& g = model.params().grads();
  return {r.loss_sum, model.last_block_rows(), std::vector<float>(g.data(), g.data() + g.numel())};
}

// max |a - b| / max |b| over one parameter's gradient.
double relative_error(const float* a, const float* b, int64_t n) {
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / std::max(scale, 1e-30);
}

// Two models with the same weights, one computing every row of its last block; both passes on
// `batch`, compared tensor by tensor within `tolerance` (relative to each tensor's largest value).
void expect_same_pass(const ModelSpec& spec, const OwnedBatch& batch, double tolerance, const Pass& pass = {}) {
  MlmModel selected(spec, batch.B, batch.B * batch.T), every(spec, batch.B, batch.B * batch.T);
  // The same weights, every one moved off its initial value (biases 0, LayerNorm 1) so that
  // nothing a bug could hide behind stays at a special value.
  for (MlmModel* model : {&selected, &every}) {
    model->params().initialize(3);
    Rng noise(99);
    float* values = model->params().values().data();
    for (size_t i = 0; i < model->params().values().numel(); ++i) values[i] += 0.1f * noise.normal();
    model->params().values_changed();
  }
  every.compute_every_row(true);
  const PassResult a = forward_backward(selected, batch, pass), b = forward_backward(every, batch, pass);
  EXPECT_EQ(b.last_rows, batch.T);
  ASSERT_LT(a.last_rows, batch.T) << "the last block computed every row";
  EXPECT_NEAR(a.loss, b.loss, tolerance * std::abs(b.loss));
  int compared = 0;
  for (const auto& p : selected.params().table()) {
    if (!p.trainable) continue;
    const size_t offset = static_cast<size_t>(selected.params().grad(p.name).data() - selected.params().grads().data());
    const int64_t n = selected.params().grad(p.name).numel();
    EXPECT_LT(relative_error(a.grads.data() + offset, b.grads.data() + offset, n), tolerance) << p.name;
    ++compared;
  }
  EXPECT_GT(compared, 10);
  // forward() (loss only) still computes every row and the same loss.
  EXPECT_NEAR(selected.forward(batch.view(), pass).loss_sum, b.loss, tolerance * std::abs(b.loss));
}

struct Case {
  std::string name;
  nlohmann::json changes;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class LastBlockRows : public ::testing::TestWithParam<Case> {};

TEST_P(LastBlockRows, GiveTheLossAndGradientsOfEveryRowInFp32) {
  const ModelSpec spec = testing::tiny_spec(GetParam().changes);
  expect_same_pass(spec, testing::random_batch(16, {16, 16, 16}, spec.vocab_size, 21), 1e-5);
  expect_same_pass(spec, testing::random_batch(16, {16, 11, 6}, spec.vocab_size, 22), 1e-5);
}

// Dropout everywhere (residuals, attention probabilities, activations): the rows take the masks of
// computing every row, so the pass is still the same.
TEST_P(LastBlockRows, GiveTheLossAndGradientsOfEveryRowWithDropout) {
  nlohmann::json changes = GetParam().changes;
  changes.update({{"dropout", 0.2}, {"attention_dropout", 0.2}, {"activation_dropout", 0.2}});
  const ModelSpec spec = testing::tiny_spec(changes);
  expect_same_pass(spec, testing::random_batch(16, {16, 13, 7}, spec.vocab_size, 26), 1e-5, Pass{true, 7, 3});
}

TEST_P(LastBlockRows, GiveTheLossAndGradientsOfEveryRowOnTheBf16Path) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "no avx512_bf16 on this CPU (" << dnnl_cpu_isa_name() << ")";
  if (GetParam().changes.contains("local_window")) GTEST_SKIP() << "the local band runs in fp32 only";
  set_matmul_bf16_operands(true);
  const ModelSpec spec = testing::tiny_spec(GetParam().changes);
  // Rows without padding take the path that rounds x once into a cache (and gathers its rows).
  expect_same_pass(spec, testing::random_batch(16, {16, 16, 16}, spec.vocab_size, 23), 1e-3);
  expect_same_pass(spec, testing::random_batch(16, {16, 12, 5}, spec.vocab_size, 24), 1e-3);
  set_matmul_bf16_operands(false);
}

// Each batch's masked counts change the last block's rows; within a quantum (8 rows a sequence
// here, T = 32) the primitives built for the first are reused.
TEST(LastBlockRowsQuantum, CountsWithinAQuantumReuseTheLastBlocksPrimitives) {
  const ModelSpec spec = testing::tiny_spec({{"seq_len", 32}});
  const OwnedBatch base = testing::random_batch(32, {32, 32, 32}, spec.vocab_size, 27);
  MlmModel model(spec, 3, 96);
  model.params().initialize(1);
  auto step = [&](int64_t per_sequence) {  // the first per_sequence tokens after <s> of every row masked
    OwnedBatch b = base;
    b.masked_positions.clear();
    b.targets.clear();
    for (int64_t r = 0; r < b.B; ++r)
      for (int64_t t = 1; t <= per_sequence; ++t) {
        b.masked_positions.push_back(static_cast<int32_t>(r * b.T + t));
        b.targets.push_back(5);
      }
    EXPECT_TRUE(std::isfinite(model.forward_backward(b.view(), Pass{}, 1.0f).loss_sum));
    return model.last_block_rows();
  };
  EXPECT_EQ(step(5), 8);
  const size_t built = matmul_primitives_built();
  for (int64_t count = 1; count <= 8; ++count) EXPECT_EQ(step(count), 8);
  EXPECT_EQ(matmul_primitives_built(), built);
  EXPECT_EQ(step(9), 16);  // the next quantum: the last block's products built once more
  EXPECT_GT(matmul_primitives_built(), built);
}

const nlohmann::json kFull = {{"attention", "full"}, {"k_per_layer", nlohmann::json::array()}};

INSTANTIATE_TEST_SUITE_P(
    EveryAttention, LastBlockRows,
    ::testing::Values(Case{"full_post", kFull},
                      Case{"full_pre",
                           {{"attention", "full"}, {"k_per_layer", nlohmann::json::array()}, {"norm", "pre"}}},
                      Case{"headwise_post", {{"sharing", "headwise"}}},
                      Case{"headwise_pre", {{"sharing", "headwise"}, {"norm", "pre"}}}, Case{"kv", {{"sharing", "kv"}}},
                      Case{"layerwise_pre", {{"sharing", "layerwise"}, {"norm", "pre"}}},
                      Case{"mean", {{"projection", "mean"}}}, Case{"conv", {{"projection", "conv"}}},
                      // Projecting before compressing: in_proj in two parts.
                      Case{"none", {{"sharing", "none"}}}, Case{"none_pre", {{"sharing", "none"}, {"norm", "pre"}}},
                      Case{"max", {{"projection", "max"}}},
                      Case{"conv_per_head", {{"projection", "conv"}, {"sharing", "none"}}},
                      // A local band: its scores at the selected rows, dK and dV scattered from them.
                      Case{"band", {{"local_window", 2}}},
                      Case{"band_max_pre", {{"projection", "max"}, {"local_window", 3}, {"norm", "pre"}}}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace linformer

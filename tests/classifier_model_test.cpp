// The sequence classifier (encoder + classification head) against the independent PyTorch
// reference (scripts/torch_classifier_reference.py on scripts/torch_reference.py's encoder,
// float64): loss, logits and every parameter gradient, for several attention configurations;
// and the frozen encoder: no encoder gradient, the head's unchanged.
// Tolerance as in torch_parity_test.cpp: 2e-5 of each tensor's largest value.

#include "linformer/model/classifier_model.h"
#include "linformer/core/rng.h"
#include "linformer/nn/safetensors.h"
#include "linformer/nn/weights_file.h"
#include "model_test_util.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>

namespace linformer {
namespace {

using testing::OwnedBatch;
using testing::TempDir;

constexpr int64_t kLabels = 3;

double relative_error(const float* a, const std::vector<double>& ref) {
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(a[i] - ref[i]));
    max_ref = std::max(max_ref, std::abs(ref[i]));
  }
  return max_diff / std::max(max_ref, 1e-30);
}

struct ClassifierCase {
  explicit ClassifierCase(const ModelSpec& spec)
      : batch(testing::random_batch(12, {12, 9, 5, 2}, spec.vocab_size, 11)) {}
  OwnedBatch batch;
  std::vector<int32_t> labels = {2, 0, 1, 2};
  ClassifierBatchView view() const { return {batch.B, batch.T, batch.ids.data(), batch.lengths.data(), labels.data()}; }
};

// Parameters off their initial values, so no bug hides behind a 0 or a 1.
void perturb(Parameters& params, uint64_t seed) {
  Rng noise(seed);
  for (size_t i = 0; i < params.values().numel(); ++i) params.values().data()[i] += 0.1f * noise.normal();
}

class ClassifierParity : public ::testing::TestWithParam<std::pair<std::string, nlohmann::json>> {};

TEST_P(ClassifierParity, LossLogitsAndGradientsMatchPyTorch) {
  const ModelSpec spec = testing::tiny_spec(GetParam().second);
  const ClassifierCase c(spec);
  ClassifierModel model(spec, kLabels, c.batch.B, 0.1f, false);
  model.params().initialize(7);
  perturb(model.params(), 99);
  TempDir dir;
  const std::string weights = (dir.path() / "w.safetensors").string(), batch = (dir.path() / "b.safetensors").string(),
                    out = (dir.path() / "ref.safetensors").string();
  save_weights(weights, model.params());
  using safetensors::DType;
  safetensors::write(batch,
                     {{"ids", DType::I32, {c.batch.B, c.batch.T}, c.batch.ids.data()},
                      {"lengths", DType::I32, {c.batch.B}, c.batch.lengths.data()},
                      {"labels", DType::I32, {c.batch.B}, c.labels.data()}},
                     {});
  const auto run = testing::run_command("/usr/bin/python3 '" LINFORMER_SOURCE_DIR
                                        "/scripts/torch_classifier_reference.py' --weights '" +
                                        weights + "' --batch '" + batch + "' --out '" + out + "'");
  ASSERT_EQ(run.exit_code, 0) << "the PyTorch reference failed (python3-torch is required):\n" << run.output;
  const auto ref = safetensors::File::read(out);

  const Pass eval{false, 0, 0};
  const ClassifierResult forward = model.forward(c.view(), eval);
  EXPECT_EQ(forward.documents, c.batch.B);
  const double loss = forward.loss_sum / static_cast<double>(c.batch.B);
  EXPECT_NEAR(loss, ref.as_doubles("loss")[0], 2e-6 * std::abs(ref.as_doubles("loss")[0])) << "loss";
  EXPECT_LT(relative_error(model.logits().data(), ref.as_doubles("logits")), 2e-5) << "logits";
  model.params().zero_grads();
  model.forward_backward(c.view(), eval, 1.0f / static_cast<float>(c.batch.B));
  int compared = 0;
  for (const auto& p : model.params().table()) {
    if (!p.trainable) continue;
    ASSERT_TRUE(ref.contains("grad." + p.name)) << "no reference gradient for " << p.name;
    EXPECT_LT(relative_error(model.params().grad(p.name).data(), ref.as_doubles("grad." + p.name)), 2e-5)
        << "gradient of " << p.name;
    ++compared;
  }
  EXPECT_GT(compared, 10);
}

INSTANTIATE_TEST_SUITE_P(Configurations, ClassifierParity,
                         ::testing::Values(std::pair<std::string, nlohmann::json>{"full_post", {{"attention", "full"}}},
                                           std::pair<std::string, nlohmann::json>{"linformer_headwise",
                                                                                  {{"sharing", "headwise"}}},
                                           std::pair<std::string, nlohmann::json>{
                                               "linformer_pre_none", {{"norm", "pre"}, {"sharing", "none"}}}),
                         [](const auto& info) { return info.param.first; });

TEST(ClassifierModel, FrozenEncoderHasNoGradientAndTheSameHeadGradient) {
  const ModelSpec spec = testing::tiny_spec();
  const ClassifierCase c(spec);
  ClassifierModel trained(spec, kLabels, c.batch.B, 0.0f, false), frozen(spec, kLabels, c.batch.B, 0.0f, true);
  trained.params().initialize(3);
  perturb(trained.params(), 5);
  std::copy(trained.params().values().data(), trained.params().values().data() + trained.params().values().numel(),
            frozen.params().values().data());
  const Pass pass{true, 1, 1};
  trained.params().zero_grads();
  frozen.params().zero_grads();
  const double a = trained.forward_backward(c.view(), pass, 1.0f).loss_sum;
  const double b = frozen.forward_backward(c.view(), pass, 1.0f).loss_sum;
  EXPECT_EQ(a, b);
  int head = 0;
  for (const auto& p : frozen.params().table()) {
    const bool is_head = p.name.rfind("classifier.", 0) == 0;
    EXPECT_EQ(p.trainable, is_head) << p.name;
    const TensorView<float> g = frozen.params().grad(p.name), h = trained.params().grad(p.name);
    for (int64_t i = 0; i < g.numel(); ++i) {
      if (is_head)
        ASSERT_EQ(g.data()[i], h.data()[i]) << p.name << "[" << i << "]";
      else
        ASSERT_EQ(g.data()[i], 0.0f) << p.name << "[" << i << "]: a frozen encoder got a gradient";
    }
    head += is_head;
  }
  EXPECT_EQ(head, 4);
}

}  // namespace
}  // namespace linformer

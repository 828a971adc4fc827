// The whole model against the independent PyTorch reference (scripts/torch_reference.py,
// Debian's python3-torch, float64): loss, logits at the masked positions, encoder output at
// real positions and every parameter gradient, for every attention configuration.
// forward_backward's last block computes only the masked rows where it can (MlmModel).
// Tolerance: relative to each tensor's largest value, 2e-5 for fp32 against fp64 (the
// errors seen are 1e-7 to 1e-6; a wrong formula gives 1e-2 or more).
// The reference runs live in every test run; a missing python3-torch is a failure.

#include "linformer/model/mlm_model.h"
#include "linformer/nn/safetensors.h"
#include "linformer/nn/weights_file.h"
#include "model_test_util.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

namespace linformer {
namespace {

using testing::OwnedBatch;
using testing::TempDir;

struct ParityCase {
  std::string name;
  nlohmann::json changes;
};

void PrintTo(const ParityCase& c, std::ostream* os) { *os << c.name; }

class TorchParity : public ::testing::TestWithParam<ParityCase> {};

void write_batch(const std::string& path, const OwnedBatch& b) {
  using safetensors::DType;
  const int64_t M = static_cast<int64_t>(b.masked_positions.size());
  safetensors::write(path,
                     {{"ids", DType::I32, {b.B, b.T}, b.ids.data()},
                      {"lengths", DType::I32, {b.B}, b.lengths.data()},
                      {"masked_positions", DType::I32, {M}, b.masked_positions.data()},
                      {"targets", DType::I32, {M}, b.targets.data()}},
                     {});
}

// max |a - ref| / max |ref|, over the selected elements.
double relative_error(const float* a, const std::vector<double>& ref, const std::vector<bool>* select = nullptr) {
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (select && !(*select)[i]) continue;
    max_diff = std::max(max_diff, std::abs(a[i] - ref[i]));
    max_ref = std::max(max_ref, std::abs(ref[i]));
  }
  return max_diff / std::max(max_ref, 1e-30);
}

TEST_P(TorchParity, LossLogitsOutputsAndGradientsMatch) {
  const ModelSpec spec = testing::tiny_spec(GetParam().changes);
  // T = 12 < n = 16 (the first T columns of E), rows padded to different lengths.
  const OwnedBatch batch = testing::random_batch(12, {12, 9, 5}, spec.vocab_size, 11);
  const int64_t M = static_cast<int64_t>(batch.masked_positions.size());

  MlmModel model(spec, batch.B, batch.B * batch.T);
  model.params().initialize(7);
  // Move every parameter off its init (biases 0, LayerNorm 1, conv = mean pooling), so
  // that nothing a bug could hide behind stays at a special value.
  // Fixed sinusoidal positions stay as made: the reference checks them against its own table.
  const TensorView<float> positions = model.params().value("embed.positions");
  const std::vector<float> made(positions.data(), positions.data() + positions.numel());
  Rng noise(99);
  for (size_t i = 0; i < model.params().values().numel(); ++i)
    model.params().values().data()[i] += 0.1f * noise.normal();
  if (spec.positions == config::PositionKind::sinusoidal) std::copy(made.begin(), made.end(), positions.data());
  TempDir dir;
  const std::string weights = (dir.path() / "w.safetensors").string();
  const std::string batch_file = (dir.path() / "b.safetensors").string();
  const std::string out = (dir.path() / "ref.safetensors").string();
  save_weights(weights, model.params());
  write_batch(batch_file, batch);
  const auto run =
      testing::run_command("/usr/bin/python3 '" LINFORMER_SOURCE_DIR "/scripts/torch_reference.py' --weights '" +
                           weights + "' --batch '" + batch_file + "' --out '" + out + "'");
  ASSERT_EQ(run.exit_code, 0) << "the PyTorch reference failed (is python3-torch installed? scripts/setup.sh):\n"
                              << run.output;
  const auto ref = safetensors::File::read(out);

  const Pass eval{false, 0, 0};
  const StepResult forward = model.forward(batch.view(), eval);
  const double loss = forward.loss_sum / M;
  EXPECT_NEAR(loss, ref.as_doubles("loss")[0], 2e-6 * std::abs(ref.as_doubles("loss")[0])) << "loss";
  EXPECT_LT(relative_error(model.logits().data(), ref.as_doubles("logits")), 2e-5) << "logits";
  std::vector<bool> real(static_cast<size_t>(batch.B * batch.T * spec.d_model));
  for (int64_t b = 0; b < batch.B; ++b)
    for (int64_t t = 0; t < batch.lengths[b]; ++t)
      for (int64_t c = 0; c < spec.d_model; ++c) real[(b * batch.T + t) * spec.d_model + c] = true;
  EXPECT_LT(relative_error(model.encoder_output().data(), ref.as_doubles("encoder_out"), &real), 2e-5)
      << "encoder output at real positions";

  // Printed below: after forward_backward the last block holds only the masked rows.
  const double logits_error = relative_error(model.logits().data(), ref.as_doubles("logits"));
  const double encoder_error = relative_error(model.encoder_output().data(), ref.as_doubles("encoder_out"), &real);
  model.params().zero_grads();
  model.forward_backward(batch.view(), eval, 1.0f / static_cast<float>(M));
  // The last block computed only the masked rows (the reference all), a local band's too.
  EXPECT_LT(model.last_block_rows(), batch.T) << "the last block computed every row";
  int compared = 0;
  double worst = 0;
  std::string worst_name;
  for (const auto& p : model.params().table()) {
    const std::string name = "grad." + p.name;
    if (!p.trainable) {
      EXPECT_FALSE(ref.contains(name)) << p.name << " is frozen here but has a reference gradient";
      continue;
    }
    ASSERT_TRUE(ref.contains(name)) << "no reference gradient for " << p.name;
    const double err = relative_error(model.params().grad(p.name).data(), ref.as_doubles(name));
    EXPECT_LT(err, 2e-5) << "gradient of " << p.name;
    if (err > worst) worst = err, worst_name = p.name;
    ++compared;
  }
  std::printf("[parity %s] loss %.3e, relative errors: logits %.2e, encoder %.2e, worst gradient %.2e (%s)\n",
              GetParam().name.c_str(), loss, logits_error, encoder_error, worst, worst_name.c_str());
  EXPECT_GT(compared, 10);
}

INSTANTIATE_TEST_SUITE_P(
    AllAttentionConfigurations, TorchParity,
    ::testing::Values(
        ParityCase{"full_post", {{"attention", "full"}}},
        ParityCase{"full_pre", {{"attention", "full"}, {"norm", "pre"}}},
        ParityCase{"linformer_none", {{"sharing", "none"}}},
        ParityCase{"linformer_headwise", {{"sharing", "headwise"}}}, ParityCase{"linformer_kv", {{"sharing", "kv"}}},
        ParityCase{"linformer_layerwise", {{"sharing", "layerwise"}}},
        ParityCase{"linformer_nonuniform_k", {{"k_per_layer", {8, 4}}}},
        // k > T = 12 (n = 16), as in a sequence-length warm-up on blocks shorter than k.
        ParityCase{"linformer_k_above_T", {{"k_per_layer", {14, 13}}}}, ParityCase{"linformer_pre", {{"norm", "pre"}}},
        ParityCase{"linformer_frozen", {{"freeze_projection", true}}},
        ParityCase{"linformer_sinusoidal", {{"positions", "sinusoidal"}}},
        ParityCase{"full_pre_sinusoidal", {{"attention", "full"}, {"norm", "pre"}, {"positions", "sinusoidal"}}},
        ParityCase{"linformer_mean", {{"projection", "mean"}}}, ParityCase{"linformer_max", {{"projection", "max"}}},
        ParityCase{"linformer_conv", {{"projection", "conv"}}},
        ParityCase{"linformer_conv_per_head", {{"projection", "conv"}, {"sharing", "none"}}},
        ParityCase{"linformer_max_kv_nonuniform", {{"projection", "max"}, {"sharing", "kv"}, {"k_per_layer", {8, 2}}}},
        ParityCase{"linformer_local_window", {{"local_window", 2}}},
        ParityCase{"linformer_local_window_wide", {{"local_window", 20}, {"sharing", "none"}}}),
    [](const ::testing::TestParamInfo<ParityCase>& info) { return info.param.name; });

}  // namespace
}  // namespace linformer

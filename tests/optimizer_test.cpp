// AdamW, learning-rate schedules and gradient clipping.

#include "linformer/model/mlm_model.h"
#include "linformer/nn/safetensors.h"
#include "linformer/nn/weights_file.h"
#include "linformer/optim/adamw.h"
#include "linformer/optim/lr_schedule.h"
#include "model_test_util.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>

namespace linformer {
namespace {

config::OptimConfig optim_config() {
  config::Recipe r;
  r.optim.lr = 1e-2;
  r.optim.adam_beta1 = 0.9;
  r.optim.adam_beta2 = 0.98;
  r.optim.adam_eps = 1e-6;
  r.optim.weight_decay = 0.1;
  return r.optim;
}

TEST(AdamW, TwoStepsMatchTheFormulaWrittenOutInDouble) {
  const ModelSpec spec = testing::tiny_spec({{"freeze_projection", true}});
  Parameters params(spec, MlmModel::parameter_table(spec));
  params.initialize(1);
  const auto optim = optim_config();
  AdamW adam(params, optim);
  // Two tensors checked element by element: a decayed weight and an undecayed bias; a frozen
  // projection must not move.
  const std::vector<std::string> names = {"layers.0.ffn.fc1.weight", "layers.0.ffn.fc1.bias", "layers.0.attn.proj_e"};
  std::vector<std::vector<double>> p, m, v;
  for (const auto& name : names) {
    const auto t = params.value(name);
    p.emplace_back(t.data(), t.data() + t.numel());
    m.emplace_back(t.numel(), 0.0);
    v.emplace_back(t.numel(), 0.0);
  }
  Rng rng(3);
  for (int step = 1; step <= 2; ++step) {
    for (size_t i = 0; i < params.grads().numel(); ++i) params.grads().data()[i] = rng.normal();
    const double lr = step == 1 ? 1e-2 : 5e-3;
    for (size_t k = 0; k < names.size(); ++k) {
      const float* g = params.grad(names[k]).data();
      const bool decay = k == 0, frozen = k == 2;
      if (frozen) continue;
      for (size_t i = 0; i < p[k].size(); ++i) {
        if (decay) p[k][i] -= lr * 0.1 * p[k][i];
        m[k][i] = 0.9 * m[k][i] + 0.1 * g[i];
        v[k][i] = 0.98 * v[k][i] + 0.02 * g[i] * static_cast<double>(g[i]);
        const double m_hat = m[k][i] / (1 - std::pow(0.9, step)), v_hat = v[k][i] / (1 - std::pow(0.98, step));
        p[k][i] -= lr * m_hat / (std::sqrt(v_hat) + 1e-6);
      }
    }
    adam.step(lr);
  }
  EXPECT_EQ(adam.steps(), 2);
  for (size_t k = 0; k < names.size(); ++k) {
    const float* got = params.value(names[k]).data();
    for (size_t i = 0; i < p[k].size(); ++i) ASSERT_NEAR(got[i], p[k][i], 2e-6) << names[k] << "[" << i << "]";
  }
}

// Every element of the bf16 copies equals the bf16 rounding of its value (same bits).
void expect_bf16_copies_current(const Parameters& params, const char* when) {
  const float* values = params.values().data();
  const bf16* copies = params.bf16_copies();
  ASSERT_NE(copies, nullptr);
  int64_t stale = 0;
  for (size_t i = 0; i < params.values().numel(); ++i) stale += copies[i].bits != to_bf16(values[i]).bits;
  EXPECT_EQ(stale, 0) << when << ": " << stale << " of " << params.values().numel() << " bf16 copies are stale";
}

TEST(AdamW, KeepsTheBf16CopiesOfTheValuesCurrentAndTheValuesUnchanged) {
  const ModelSpec spec = testing::tiny_spec({{"freeze_projection", true}});
  Parameters with(spec, MlmModel::parameter_table(spec)), without(spec, MlmModel::parameter_table(spec));
  with.keep_bf16_copies();
  EXPECT_EQ(without.bf16_copies(), nullptr);
  with.initialize(1);
  without.initialize(1);
  expect_bf16_copies_current(with, "after initialize");
  EXPECT_EQ(with.value_bf16("layers.0.ffn.fc1.weight").shape(), with.value("layers.0.ffn.fc1.weight").shape());
  EXPECT_EQ(with.value_bf16("layers.0.ffn.fc1.weight").data()[5].bits,
            to_bf16(with.value("layers.0.ffn.fc1.weight").data()[5]).bits);

  AdamW adam_with(with, optim_config()), adam_without(without, optim_config());
  Rng rng(3);
  for (int step = 1; step <= 3; ++step) {
    for (size_t i = 0; i < with.grads().numel(); ++i) with.grads().data()[i] = without.grads().data()[i] = rng.normal();
    adam_with.step(1e-2);
    adam_without.step(1e-2);
    expect_bf16_copies_current(with, "after an update");
  }
  // Writing the copies changes nothing in the f32 update.
  for (size_t i = 0; i < with.values().numel(); ++i)
    ASSERT_EQ(with.values().data()[i], without.values().data()[i]) << "element " << i;
}

TEST(AdamW, LoadedWeightsRefreshTheBf16Copies) {
  const ModelSpec spec = testing::tiny_spec();
  testing::TempDir dir;
  const std::string path = (dir.path() / "w.safetensors").string();
  Parameters saved(spec, MlmModel::parameter_table(spec)), loaded(spec, MlmModel::parameter_table(spec));
  saved.initialize(7);
  save_weights(path, saved);
  loaded.keep_bf16_copies();
  loaded.initialize(8);
  load_weights(path, loaded);
  EXPECT_EQ(loaded.values().data()[3], saved.values().data()[3]);
  expect_bf16_copies_current(loaded, "after load_weights");
  EXPECT_THROW(saved.value_bf16("embed.tokens"), Error);  // it keeps none
}

TEST(AdamW, DecayOfBiasesAndNormsIsConfigurable) {
  const ModelSpec spec = testing::tiny_spec();
  Parameters params(spec, MlmModel::parameter_table(spec));
  params.initialize(1);
  auto optim = optim_config();
  optim.decay_bias_and_norm = true;
  AdamW adam(params, optim);
  params.zero_grads();  // zero gradients: only the decay moves parameters
  const float before = params.value("layers.0.ln_attn.weight").data()[0];
  adam.step(0.5);
  EXPECT_NEAR(params.value("layers.0.ln_attn.weight").data()[0], before * (1 - 0.5 * 0.1), 1e-6);
}

TEST(GradientClipping, NormAndScale) {
  const ModelSpec spec = testing::tiny_spec({{"freeze_projection", true}});
  Parameters params(spec, MlmModel::parameter_table(spec));
  params.zero_grads();
  params.grad("mlm_head.bias").data()[0] = 3;
  params.grad("embed.tokens").data()[5] = 4;
  params.grad("layers.1.attn.proj_f").data()[0] = 100;  // frozen: not part of the norm
  EXPECT_DOUBLE_EQ(gradient_norm(params), 5.0);
  scale_gradients(params, 0.2f);
  EXPECT_FLOAT_EQ(params.grad("embed.tokens").data()[5], 0.8f);
  EXPECT_NEAR(gradient_norm(params), 1.0, 1e-7);
}

TEST(LrSchedule, WarmupThenEachDecay) {
  config::OptimConfig o = optim_config();
  o.lr = 1.0;
  o.end_lr = 0.1;
  o.warmup_updates = 10;
  o.power = 2.0;
  using config::LrSchedule;
  o.schedule = LrSchedule::polynomial;
  EXPECT_DOUBLE_EQ(learning_rate(o, 110, 1), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(o, 110, 10), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate(o, 110, 60), 0.1 + 0.9 * 0.25);  // halfway: (1 - 0.5)^2
  EXPECT_DOUBLE_EQ(learning_rate(o, 110, 110), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(o, 110, 500), 0.1);  // past the end it stays at end_lr
  o.schedule = LrSchedule::linear;
  EXPECT_DOUBLE_EQ(learning_rate(o, 110, 35), 0.1 + 0.9 * 0.75);
  o.schedule = LrSchedule::cosine;
  EXPECT_NEAR(learning_rate(o, 110, 60), 0.1 + 0.9 * 0.5, 1e-12);
  EXPECT_NEAR(learning_rate(o, 110, 35), 0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI / 4)), 1e-12);
  o.schedule = LrSchedule::inverse_sqrt;
  EXPECT_DOUBLE_EQ(learning_rate(o, 110, 40), std::sqrt(10.0 / 40.0));
  o.schedule = LrSchedule::constant;
  EXPECT_DOUBLE_EQ(learning_rate(o, 110, 77), 1.0);
  o.warmup_updates = 0;
  EXPECT_DOUBLE_EQ(learning_rate(o, 110, 1), 1.0);
}

// config::needs_length() (the recipe validator's list) names exactly the schedules whose rate
// after the warm-up depends on train.max_updates.
TEST(LrSchedule, NeedsLengthNamesTheSchedulesThatReadMaxUpdates) {
  config::OptimConfig o = optim_config();
  o.warmup_updates = 10;
  for (const auto& [schedule, name] : enum_names(config::LrSchedule{})) {
    o.schedule = schedule;
    const bool reads_length = learning_rate(o, 0, 20) != learning_rate(o, 1000, 20);
    EXPECT_EQ(config::needs_length(schedule), reads_length) << name;
  }
}

// N AdamW steps on one batch against the PyTorch reference's own AdamW loop.
TEST(AdamW, StepsMatchThePyTorchReference) {
  const ModelSpec spec = testing::tiny_spec({{"sharing", "kv"}});
  const auto batch = testing::random_batch(12, {12, 8, 5}, spec.vocab_size, 5);
  MlmModel model(spec, batch.B, batch.B * batch.T);
  model.params().initialize(4);
  testing::TempDir dir;
  const std::string weights = (dir.path() / "w.safetensors").string(),
                    batch_file = (dir.path() / "b.safetensors").string(), out = (dir.path() / "o.safetensors").string();
  save_weights(weights, model.params());
  const int64_t M = static_cast<int64_t>(batch.masked_positions.size());
  using safetensors::DType;
  safetensors::write(batch_file,
                     {{"ids", DType::I32, {batch.B, batch.T}, batch.ids.data()},
                      {"lengths", DType::I32, {batch.B}, batch.lengths.data()},
                      {"masked_positions", DType::I32, {M}, batch.masked_positions.data()},
                      {"targets", DType::I32, {M}, batch.targets.data()}},
                     {});
  const int steps = 4;
  const auto run =
      testing::run_command("/usr/bin/python3 '" LINFORMER_SOURCE_DIR "/scripts/torch_reference.py' --weights '" +
                           weights + "' --batch '" + batch_file + "' --out '" + out +
                           "' --adam-steps 4 --lr 0.003 --beta1 0.9 --beta2 0.98 --eps 1e-6 --weight-decay 0.01");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto ref = safetensors::File::read(out);

  config::OptimConfig optim = optim_config();
  optim.weight_decay = 0.01;
  AdamW adam(model.params(), optim);
  const auto ref_losses = ref.as_doubles("losses");
  for (int step = 0; step < steps; ++step) {
    model.params().zero_grads();
    const double loss = model.forward_backward(batch.view(), Pass{}, 1.0f / static_cast<float>(M)).loss_sum / M;
    EXPECT_NEAR(loss, ref_losses[step], 1e-5 * ref_losses[step]) << "loss before step " << step + 1;
    adam.step(0.003);
  }
  const int64_t C = spec.d_model;
  for (const auto& p : model.params().table()) {
    const auto expected = ref.as_doubles("param." + p.name);
    const float* got = model.params().value(p.name).data();
    double max_diff = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      // The key bias has an exactly zero gradient (it shifts every score of a query equally);
      // Adam turns float rounding noise there into full-size steps. Skip those entries.
      const bool key_bias = p.name.find("in_proj.bias") != std::string::npos && static_cast<int64_t>(i) >= C &&
                            static_cast<int64_t>(i) < 2 * C;
      if (!key_bias) max_diff = std::max(max_diff, std::abs(got[i] - expected[i]));
    }
    // 4 steps of at most lr = 3e-3 each move parameters by ~1e-2; allow 1e-5 of disagreement.
    EXPECT_LT(max_diff, 1e-5) << p.name;
  }
}

}  // namespace
}  // namespace linformer

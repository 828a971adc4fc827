// The C++ model on its own: finite-difference gradients (dropout on and off),
// padding invariance, determinism, gradient accumulation, weights files.

#include "linformer/core/fs.h"
#include "linformer/kernels/matmul.h"
#include "linformer/model/mlm_model.h"
#include "linformer/nn/safetensors.h"
#include "linformer/nn/weights_file.h"
#include "linformer/optim/adamw.h"
#include "model_test_util.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace linformer {
namespace {

using ::testing::HasSubstr;
using testing::OwnedBatch;
using testing::TempDir;

void perturb(Parameters& params, uint64_t seed, float scale) {
  Rng rng(seed);
  for (size_t i = 0; i < params.values().numel(); ++i) params.values().data()[i] += scale * rng.normal();
}

// ---- finite differences ----------------------------------------------------------------
// For each parameter tensor: the analytic directional derivative <g, v> against the central
// difference (L(θ + εv) - L(θ - εv)) / 2ε along a random unit direction v, in float. The
// loss is accumulated in double; ε = 1e-2 keeps float rounding (≈1e-7·|L|/ε) and the
// truncation error (≈ε²) both near 1e-5, so a tolerance of 2e-3 relative fails any wrong term.

struct FdCase {
  std::string name;
  nlohmann::json changes;
  bool training;  // dropout on (masks depend only on seed and step, so L is a fixed function)
};
void PrintTo(const FdCase& c, std::ostream* os) { *os << c.name; }

class FiniteDifferences : public ::testing::TestWithParam<FdCase> {};

TEST_P(FiniteDifferences, EveryParameterTensor) {
  const ModelSpec spec = testing::tiny_spec(GetParam().changes);
  const OwnedBatch batch = testing::random_batch(12, {12, 9, 5}, spec.vocab_size, 3);
  MlmModel model(spec, batch.B, batch.B * batch.T);
  model.params().initialize(5);
  perturb(model.params(), 6, 0.1f);
  const Pass pass{GetParam().training, 1234, 17};
  const float scale = 1.0f / static_cast<float>(batch.masked_positions.size());
  auto loss = [&] { return model.forward(batch.view(), pass).loss_sum * scale; };

  model.params().zero_grads();
  model.forward_backward(batch.view(), pass, scale);
  Rng rng(8);
  for (const auto& p : model.params().table()) {
    if (!p.trainable) continue;
    float* x = model.params().value(p.name).data();
    const float* g = model.params().grad(p.name).data();
    const int64_t n = p.shape.numel();
    std::vector<float> v(static_cast<size_t>(n)), saved(x, x + n);
    double norm = 0;
    for (auto& e : v) {
      e = rng.normal();
      norm += static_cast<double>(e) * e;
    }
    double analytic = 0;
    for (int64_t i = 0; i < n; ++i) analytic += g[i] * (v[i] /= static_cast<float>(std::sqrt(norm)));
    const float eps = 1e-2f;
    for (int64_t i = 0; i < n; ++i) x[i] = saved[i] + eps * v[i];
    const double up = loss();
    for (int64_t i = 0; i < n; ++i) x[i] = saved[i] - eps * v[i];
    const double down = loss();
    std::memcpy(x, saved.data(), sizeof(float) * static_cast<size_t>(n));
    const double numeric = (up - down) / (2 * eps);
    const double gradient_norm = [&] {
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += static_cast<double>(g[i]) * g[i];
      return std::sqrt(s);
    }();
    // Relative to the gradient's norm: the largest a directional derivative can be.
    EXPECT_NEAR(analytic, numeric, 2e-3 * gradient_norm + 1e-6)
        << p.name << ": analytic " << analytic << ", finite difference " << numeric;
  }
}

// Every attention, sharing, projection and norm variant, with and without dropout.
std::vector<FdCase> model_variants() {
  return {
      FdCase{"full_post", {{"attention", "full"}}, false},
      FdCase{"full_pre_dropout",
             {{"attention", "full"},
              {"norm", "pre"},
              {"dropout", 0.2},
              {"attention_dropout", 0.2},
              {"activation_dropout", 0.2}},
             true},
      FdCase{"linformer_none", {{"sharing", "none"}}, false},
      FdCase{"linformer_headwise_dropout",
             {{"dropout", 0.1}, {"attention_dropout", 0.3}, {"activation_dropout", 0.1}},
             true},
      FdCase{"linformer_layerwise", {{"sharing", "layerwise"}}, false},
      FdCase{"linformer_conv_none", {{"projection", "conv"}, {"sharing", "none"}}, false},
      FdCase{"linformer_mean_pre", {{"projection", "mean"}, {"norm", "pre"}}, false},
      FdCase{"linformer_max_kv", {{"projection", "max"}, {"sharing", "kv"}}, false},
      FdCase{"linformer_sinusoidal", {{"positions", "sinusoidal"}}, false},
      FdCase{"linformer_local_window", {{"local_window", 2}}, false},
      FdCase{"linformer_local_window_dropout", {{"local_window", 2}, {"attention_dropout", 0.3}}, true},
      FdCase{"linformer_max_local_window_pre", {{"projection", "max"}, {"local_window", 1}, {"norm", "pre"}}, false}};
}

std::string variant_name(const ::testing::TestParamInfo<FdCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Model, FiniteDifferences, ::testing::ValuesIn(model_variants()), variant_name);

// Data parallel sums a range of the gradients as soon as the backward pass says it is final:
// from then on nothing may write to it. Every range said final must equal the gradients at the
// end of the pass (the last of an update's micro-batches, gradients already accumulated), and
// the offsets must fall block by block to 0.
class GradientsFinal : public ::testing::TestWithParam<FdCase> {};

TEST_P(GradientsFinal, NoGradientChangesOnceTheBackwardPassSaysItIsFinal) {
  const ModelSpec spec = testing::tiny_spec(GetParam().changes);
  ASSERT_GE(spec.layers, 2);
  const OwnedBatch batch = testing::random_batch(12, {12, 9, 5}, spec.vocab_size, 3);
  MlmModel model(spec, batch.B, batch.B * batch.T);
  model.params().initialize(5);
  const float scale = 1.0f / static_cast<float>(2 * batch.masked_positions.size());
  model.params().zero_grads();
  model.forward_backward(batch.view(), Pass{GetParam().training, 1, 1}, scale);  // an earlier micro-batch
  const float* grads = model.params().grads().data();
  const size_t numel = model.params().grads().numel();
  std::vector<std::pair<size_t, std::vector<float>>> said_final;  // (offset, grads[offset, numel) then)
  model.forward_backward(batch.view(), Pass{GetParam().training, 1, 2}, scale, [&](size_t offset) {
    ASSERT_LT(offset, numel);
    said_final.emplace_back(offset, std::vector<float>(grads + offset, grads + numel));
  });
  ASSERT_EQ(said_final.size(), static_cast<size_t>(spec.layers) + 1) << "once per block and once at the end";
  EXPECT_EQ(said_final.back().first, 0u);
  std::vector<size_t> offsets;  // as announced beforehand (data parallel plans its sums on them)
  for (const auto& said : said_final) offsets.push_back(said.first);
  EXPECT_EQ(offsets, model.gradients_final_offsets());
  for (size_t i = 0; i < said_final.size(); ++i) {
    const auto& [offset, then] = said_final[i];
    if (i > 0) {
      EXPECT_LT(offset, said_final[i - 1].first) << "offsets fall block by block";
    }
    EXPECT_EQ(0, std::memcmp(then.data(), grads + offset, then.size() * sizeof(float)))
        << "a gradient from offset " << offset << " changed after the backward pass said it was final (call " << i
        << ")";
  }
  // Not vacuous: the first range said final (the last block and the head) holds gradients.
  const std::vector<float>& first = said_final.front().second;
  EXPECT_TRUE(std::any_of(first.begin(), first.end(), [](float g) { return g != 0.0f; }));
}

INSTANTIATE_TEST_SUITE_P(Model, GradientsFinal, ::testing::ValuesIn(model_variants()), variant_name);

// ---- padding invariance ------------------------------------------------------------------

class PaddingInvariance : public ::testing::TestWithParam<FdCase> {};

TEST_P(PaddingInvariance, OutputsAndGradientsDoNotDependOnPadding) {
  const ModelSpec spec = testing::tiny_spec(GetParam().changes);
  const OwnedBatch tight = testing::random_batch(9, {9, 6, 3}, spec.vocab_size, 21);
  const OwnedBatch loose = testing::repad(tight, 16);
  MlmModel model(spec, 3, 48);
  model.params().initialize(1);
  perturb(model.params(), 2, 0.1f);
  const Pass pass{GetParam().training, 5, 9};
  const float scale = 1.0f / static_cast<float>(tight.masked_positions.size());

  auto run = [&](const OwnedBatch& b, std::vector<float>& logits, std::vector<float>& out, std::vector<float>& grads) {
    model.params().zero_grads();
    const double loss = model.forward(b.view(), pass).loss_sum;
    logits.assign(model.logits().data(), model.logits().data() + model.logits().numel());
    out.clear();
    for (int64_t r = 0; r < b.B; ++r)
      for (int64_t t = 0; t < b.lengths[r]; ++t)
        for (int64_t c = 0; c < spec.d_model; ++c) out.push_back(model.encoder_output()(r, t, c));
    model.forward_backward(b.view(), pass, scale);
    grads.assign(model.params().grads().data(), model.params().grads().data() + model.params().grads().numel());
    return loss;
  };
  std::vector<float> logits1, out1, grads1, logits2, out2, grads2;
  const double loss1 = run(tight, logits1, out1, grads1);
  const double loss2 = run(loose, logits2, out2, grads2);
  EXPECT_NEAR(loss1, loss2, 1e-5 * std::abs(loss1));
  ASSERT_EQ(out1.size(), out2.size());
  for (size_t i = 0; i < out1.size(); ++i) ASSERT_NEAR(out1[i], out2[i], 1e-5) << "encoder output " << i;
  for (size_t i = 0; i < logits1.size(); ++i) ASSERT_NEAR(logits1[i], logits2[i], 1e-4) << "logit " << i;
  for (size_t i = 0; i < grads1.size(); ++i) ASSERT_NEAR(grads1[i], grads2[i], 1e-5) << "gradient element " << i;

  // And each sequence alone gives what it gets in the batch.
  OwnedBatch alone = tight;
  alone.B = 1;
  alone.lengths = {tight.lengths[2]};
  alone.ids.assign(tight.ids.begin() + 2 * tight.T, tight.ids.end());
  alone.masked_positions.clear();
  alone.targets.clear();
  for (size_t m = 0; m < tight.masked_positions.size(); ++m)
    if (tight.masked_positions[m] / tight.T == 2) {
      alone.masked_positions.push_back(tight.masked_positions[m] % static_cast<int32_t>(tight.T));
      alone.targets.push_back(tight.targets[m]);
    }
  model.forward(alone.view(), Pass{false, 0, 0});
  std::vector<float> alone_out(model.encoder_output().data(),
                               model.encoder_output().data() + tight.lengths[2] * spec.d_model);
  model.forward(tight.view(), Pass{false, 0, 0});
  for (int64_t t = 0; t < tight.lengths[2]; ++t)
    for (int64_t c = 0; c < spec.d_model; ++c)
      ASSERT_NEAR(model.encoder_output()(2, t, c), alone_out[t * spec.d_model + c], 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Model, PaddingInvariance,
                         ::testing::Values(FdCase{"full", {{"attention", "full"}}, false},
                                           FdCase{"linformer_linear", {}, false},
                                           FdCase{"linformer_none_pre", {{"sharing", "none"}, {"norm", "pre"}}, false},
                                           FdCase{"linformer_mean", {{"projection", "mean"}}, false},
                                           FdCase{"linformer_max", {{"projection", "max"}}, false},
                                           FdCase{"linformer_conv", {{"projection", "conv"}}, false}),
                         [](const ::testing::TestParamInfo<FdCase>& info) { return info.param.name; });

// ---- determinism, dropout, accumulation ---------------------------------------------------

// Sinusoidal positions: a fixed table (its values are checked against the PyTorch reference's
// own table in TorchParity.*/*sinusoidal*) with the RMS of a learned one, no gradient, no update.
TEST(Model, SinusoidalPositionsAreFixedWithTheScaleOfALearnedTable) {
  const ModelSpec spec = testing::tiny_spec({{"positions", "sinusoidal"}});
  const OwnedBatch batch = testing::random_batch(12, {12, 9, 5}, spec.vocab_size, 3);
  MlmModel model(spec, batch.B, batch.B * batch.T);
  model.params().initialize(5);
  const auto& table = model.params().table();
  const auto entry =
      std::find_if(table.begin(), table.end(), [](const auto& p) { return p.name == "embed.positions"; });
  ASSERT_NE(entry, table.end());
  EXPECT_FALSE(entry->trainable);
  const TensorView<float> positions = model.params().value("embed.positions");
  const std::vector<float> before(positions.data(), positions.data() + positions.numel());
  double square_sum = 0;
  for (float x : before) square_sum += static_cast<double>(x) * x;
  EXPECT_NEAR(std::sqrt(square_sum / static_cast<double>(before.size())), spec.init_std, 1e-6);
  // Row t = 0: sin 0 = 0 in even columns, √2·init_std·cos 0 in odd ones.
  for (int64_t c = 0; c < spec.d_model; ++c)
    EXPECT_NEAR(before[static_cast<size_t>(c)], c % 2 ? std::sqrt(2.0) * spec.init_std : 0.0, 1e-7) << "column " << c;

  model.params().zero_grads();
  model.forward_backward(batch.view(), Pass{true, 1, 1}, 0.1f);
  const TensorView<float> grad = model.params().grad("embed.positions");
  EXPECT_EQ(std::count(grad.data(), grad.data() + grad.numel(), 0.0f), grad.numel());
  config::OptimConfig optim = config::Recipe().optim;  // the declared defaults
  optim.weight_decay = 0.1;
  AdamW adam(model.params(), optim);
  adam.step(1e-2);
  EXPECT_TRUE(std::equal(before.begin(), before.end(), positions.data()));
  EXPECT_NE(model.params().value("embed.tokens").data()[spec.d_model], 0.0f);
}

// projection_init = "local": every row of E and F averages a window of n/k neighbouring positions,
// so at initialisation a learned projection computes what mean pooling (its own code path) does,
// padding included, and at k = n it is the identity: exactly full attention on unpadded rows.
TEST(Model, LocalProjectionInitIsMeanPoolingAndTheIdentityAtKEqualsN) {
  const auto eval_loss = [](const ModelSpec& spec, const OwnedBatch& batch) {
    MlmModel model(spec, batch.B, batch.B * batch.T);
    model.params().initialize(3);
    return model.forward(batch.view(), Pass{false, 1, 1}).loss_sum;
  };
  const OwnedBatch padded = testing::random_batch(16, {16, 10, 7}, 40, 6);
  for (const char* sharing : {"headwise", "none", "kv", "layerwise"}) {
    const double local = eval_loss(testing::tiny_spec({{"projection_init", "local"}, {"sharing", sharing}}), padded);
    const double mean = eval_loss(testing::tiny_spec({{"projection", "mean"}, {"sharing", sharing}}), padded);
    const double random = eval_loss(testing::tiny_spec({{"sharing", sharing}}), padded);
    EXPECT_NEAR(local, mean, 1e-5 * std::abs(mean)) << sharing;
    EXPECT_GT(std::abs(local - random), 1e-3 * std::abs(mean)) << sharing << ": the init made no difference";
  }
  const OwnedBatch unpadded = testing::random_batch(16, {16, 16}, 40, 7);
  const double identity =
      eval_loss(testing::tiny_spec({{"projection_init", "local"}, {"k_per_layer", {16, 16}}}), unpadded);
  const double full = eval_loss(testing::tiny_spec({{"attention", "full"}}), unpadded);
  EXPECT_NEAR(identity, full, 1e-5 * std::abs(full));

  MlmModel model(testing::tiny_spec({{"projection_init", "local"}, {"k_per_layer", {4, 3}}}), 1, 16);
  model.params().initialize(3);
  const TensorView<float> e1 = model.params().value("layers.1.attn.proj_e");  // (3, 16): windows 0-4, 5-9, 10-15
  for (int64_t t = 0; t < 16; ++t) {
    EXPECT_FLOAT_EQ(e1.data()[t], t < 5 ? 0.2f : 0.0f) << t;
    EXPECT_FLOAT_EQ(e1.data()[16 + t], t >= 5 && t < 10 ? 0.2f : 0.0f) << t;
    EXPECT_FLOAT_EQ(e1.data()[32 + t], t >= 10 ? 1.0f / 6 : 0.0f) << t;
  }
}

TEST(Model, DeterministicWithoutDropoutAndSeededWithIt) {
  const ModelSpec spec = testing::tiny_spec({{"dropout", 0.1}, {"attention_dropout", 0.1}});
  const OwnedBatch batch = testing::random_batch(16, {16, 10}, spec.vocab_size, 4);
  MlmModel model(spec, 2, 32);
  model.params().initialize(3);
  const double eval1 = model.forward(batch.view(), Pass{false, 1, 1}).loss_sum;
  const double eval2 = model.forward(batch.view(), Pass{false, 2, 9}).loss_sum;  // seeds unused without dropout
  EXPECT_EQ(eval1, eval2);
  const double train_a = model.forward(batch.view(), Pass{true, 1, 1}).loss_sum;
  const double train_b = model.forward(batch.view(), Pass{true, 1, 1}).loss_sum;
  const double other_seed = model.forward(batch.view(), Pass{true, 2, 1}).loss_sum;
  const double other_step = model.forward(batch.view(), Pass{true, 1, 2}).loss_sum;
  EXPECT_EQ(train_a, train_b);
  EXPECT_NE(train_a, eval1);
  EXPECT_NE(train_a, other_seed);
  EXPECT_NE(train_a, other_step);

  // Same initialisation seed, same parameters; another seed, others.
  MlmModel twin(spec, 2, 32);
  twin.params().initialize(3);
  EXPECT_EQ(0, std::memcmp(twin.params().values().data(), model.params().values().data(),
                           model.params().values().layout().bytes()));
  twin.params().initialize(4);
  EXPECT_NE(0, std::memcmp(twin.params().values().data(), model.params().values().data(),
                           model.params().values().layout().bytes()));
}

TEST(Model, AttentionDropoutDropsTheLocalBandToo) {
  // Attention dropout at p ≈ 1 drops every probability, the compressed keys' and the band's (each
  // is kept with probability 2^-16, 1/(1 − p) times larger: none of these is, at this seed): each
  // attention layer then outputs out_proj's bias alone, as the same model without dropout does
  // with out_proj's weights zeroed. A band left undropped would add its P_band V.
  const nlohmann::json band = {{"local_window", 2}};
  nlohmann::json dropped = band;
  dropped["attention_dropout"] = 0.99999;
  const OwnedBatch batch = testing::random_batch(16, {16, 11}, 40, 5);
  MlmModel model(testing::tiny_spec(dropped), 2, 16), twin(testing::tiny_spec(band), 2, 16);
  model.params().initialize(3);
  twin.params().initialize(3);
  const double all_dropped = model.forward(batch.view(), Pass{true, 7, 1}).loss_sum;
  const double with_probs = twin.forward(batch.view(), Pass{false, 7, 1}).loss_sum;
  for (int layer = 0; layer < 2; ++layer) {
    const TensorView<float> w = twin.params().value("layers." + std::to_string(layer) + ".attn.out_proj.weight");
    std::fill(w.data(), w.data() + w.numel(), 0.0f);
  }
  EXPECT_NE(all_dropped, with_probs);
  EXPECT_NEAR(all_dropped, twin.forward(batch.view(), Pass{false, 7, 1}).loss_sum, 1e-9 * std::abs(all_dropped));
}

TEST(Model, GradientsAccumulateAcrossMicroBatches) {
  // Two micro-batches with grad_scale = 1 / (all their masked tokens) equal one batch of both.
  const ModelSpec spec = testing::tiny_spec({{"attention", "full"}});
  const OwnedBatch both = testing::random_batch(12, {12, 7, 10, 4}, spec.vocab_size, 8);
  OwnedBatch first = both, second = both;
  first.B = second.B = 2;
  first.lengths = {both.lengths[0], both.lengths[1]};
  second.lengths = {both.lengths[2], both.lengths[3]};
  first.ids.assign(both.ids.begin(), both.ids.begin() + 24);
  second.ids.assign(both.ids.begin() + 24, both.ids.end());
  first.masked_positions.clear(), first.targets.clear(), second.masked_positions.clear(), second.targets.clear();
  for (size_t m = 0; m < both.masked_positions.size(); ++m) {
    const int32_t p = both.masked_positions[m];
    OwnedBatch& part = p < 24 ? first : second;
    part.masked_positions.push_back(p % 24);
    part.targets.push_back(both.targets[m]);
  }
  MlmModel model(spec, 4, 48);
  model.params().initialize(2);
  const float scale = 1.0f / static_cast<float>(both.masked_positions.size());
  model.params().zero_grads();
  const double whole = model.forward_backward(both.view(), Pass{}, scale).loss_sum;
  const std::vector<float> expected(model.params().grads().data(),
                                    model.params().grads().data() + model.params().grads().numel());
  model.params().zero_grads();
  const double parts = model.forward_backward(first.view(), Pass{}, scale).loss_sum +
                       model.forward_backward(second.view(), Pass{}, scale).loss_sum;
  EXPECT_NEAR(whole, parts, 1e-5 * whole);
  for (size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(model.params().grads().data()[i], expected[i], 1e-6 + 1e-4 * std::abs(expected[i])) << i;
}

TEST(Model, MaskedCountsWithinARowQuantumReuseTheHeadsMatmulPrimitives) {
  // Dynamic masking changes the number of masked tokens every batch; each count once built its
  // own oneDNN primitives, kept for the run (hundreds, 1-2 GB of RSS in a 20 M-token run). The
  // head pads its rows to a multiple of 32, so counts 1 to 32 share the primitives.
  const ModelSpec spec = testing::tiny_spec();
  OwnedBatch all = testing::random_batch(16, {16, 16, 16}, spec.vocab_size, 5);
  all.masked_positions.clear();
  all.targets.clear();
  for (int64_t r = 0; r < all.B; ++r)
    for (int64_t t = 1; t < all.T; ++t) {  // every position but <s> masked: 45
      const int32_t p = static_cast<int32_t>(r * all.T + t);
      if (all.ids[p] != 4)
        all.targets.push_back(all.ids[p]);
      else
        all.targets.push_back(5);
      all.masked_positions.push_back(p);
      all.ids[p] = 4;
    }
  MlmModel model(spec, 3, 45);
  model.params().initialize(1);
  model.compute_every_row(true);  // the last block's rows have their own quantum (last_block_rows_test.cpp)
  auto step = [&](size_t masked) {
    OwnedBatch b = all;
    b.masked_positions.resize(masked);
    b.targets.resize(masked);
    const double loss = model.forward_backward(b.view(), Pass{true, 1, 1}, 1.0f).loss_sum;
    EXPECT_TRUE(std::isfinite(loss)) << masked;
  };
  step(17);
  const size_t built = matmul_primitives_built();
  for (size_t masked = 1; masked <= 32; ++masked) step(masked);
  EXPECT_EQ(matmul_primitives_built(), built);
  step(33);  // the next quantum builds the head's products once more
  EXPECT_GT(matmul_primitives_built(), built);
}

TEST(Model, RejectsBadBatches) {
  const ModelSpec spec = testing::tiny_spec();
  MlmModel model(spec, 2, 8);
  model.params().initialize(1);
  OwnedBatch b = testing::random_batch(8, {8, 5}, spec.vocab_size, 1);
  OwnedBatch bad = b;
  bad.ids[3] = spec.vocab_size;
  EXPECT_THROW(model.forward(bad.view(), Pass{}), Error);
  bad = b;
  bad.masked_positions[0] = 8 + 6;  // row 1 position 6: padding
  EXPECT_THROW(model.forward(bad.view(), Pass{}), Error);
  bad = b;
  bad.lengths[1] = 9;
  EXPECT_THROW(model.forward(bad.view(), Pass{}), Error);
  OwnedBatch big = testing::random_batch(17, {17}, spec.vocab_size, 1);  // T > n
  EXPECT_THROW(model.forward(big.view(), Pass{}), Error);
}

// ---- inference models ------------------------------------------------------------------------
// An inference model shares one buffer per cache role across layers and applies GELU in place;
// it must compute exactly what a training model computes, in less memory.

class InferenceModel : public ::testing::TestWithParam<nlohmann::json> {};

TEST_P(InferenceModel, MatchesTheTrainingModelInLessMemory) {
  const ModelSpec spec = testing::tiny_spec(GetParam());
  const OwnedBatch batch = testing::random_batch(12, {12, 9, 5}, spec.vocab_size, 3);
  MlmModel training(spec, batch.B, 16), inference(spec, batch.B, 16, WorkspaceUse::inference);
  training.params().initialize(5);
  perturb(training.params(), 6, 0.1f);
  std::memcpy(inference.params().values().data(), training.params().values().data(),
              training.params().values().layout().bytes());
  const StepResult a = training.forward(batch.view(), Pass{});
  const StepResult b = inference.forward(batch.view(), Pass{});
  EXPECT_EQ(a.loss_sum, b.loss_sum);
  EXPECT_EQ(a.correct, b.correct);
  const auto la = training.logits(), lb = inference.logits();
  ASSERT_EQ(la.numel(), lb.numel());
  EXPECT_EQ(0, std::memcmp(la.data(), lb.data(), sizeof(float) * static_cast<size_t>(la.numel())));
  const auto ea = training.encoder_output(), eb = inference.encoder_output();
  for (int64_t i = 0; i < ea.numel(); ++i) ASSERT_EQ(ea.data()[i], eb.data()[i]) << i;

  EXPECT_LT(inference.activation_bytes(), training.activation_bytes() * 2 / 3);
  EXPECT_EQ(inference.activation_bytes(),
            MlmModel::planned_activation_bytes(spec, batch.B, 16, WorkspaceUse::inference));
  EXPECT_EQ(training.activation_bytes(), MlmModel::planned_activation_bytes(spec, batch.B, 16, WorkspaceUse::training));
  EXPECT_THAT([&] { inference.forward_backward(batch.view(), Pass{}, 1.0f); },
              ::testing::ThrowsMessage<Error>(HasSubstr("inference model")));
  EXPECT_THAT(
      [&] {
        inference.forward(batch.view(), Pass{true, 1, 1});
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("inference model")));
}

TEST(InferenceModelChunks, FeedForwardInRowChunksMatchesOneChunk) {
  // 20 × 128 = 2560 rows: the inference feed-forward runs them as 2048 + 512.
  const ModelSpec spec = testing::tiny_spec({{"seq_len", 128}, {"k_per_layer", {16, 16}}});
  std::vector<int32_t> lengths(20, 128);
  lengths[19] = 77;
  const OwnedBatch batch = testing::random_batch(128, lengths, spec.vocab_size, 4);
  const int64_t M = static_cast<int64_t>(batch.masked_positions.size());
  MlmModel training(spec, 20, M), inference(spec, 20, M, WorkspaceUse::inference);
  training.params().initialize(5);
  std::memcpy(inference.params().values().data(), training.params().values().data(),
              training.params().values().layout().bytes());
  const double a = training.forward(batch.view(), Pass{}).loss_sum,
               b = inference.forward(batch.view(), Pass{}).loss_sum;
  EXPECT_NEAR(a, b, 1e-6 * std::abs(a));
  const auto ea = training.encoder_output(), eb = inference.encoder_output();
  for (int64_t i = 0; i < ea.numel(); ++i) ASSERT_NEAR(ea.data()[i], eb.data()[i], 1e-5) << i;
}

INSTANTIATE_TEST_SUITE_P(Variants, InferenceModel,
                         ::testing::Values(nlohmann::json{{"attention", "full"}},
                                           nlohmann::json{
                                               {"sharing", "layerwise"}, {"layers", 3}, {"k_per_layer", {4, 4, 4}}},
                                           nlohmann::json{{"k_per_layer", {4, 8}}, {"norm", "pre"}},
                                           nlohmann::json{{"projection", "max"}, {"dropout", 0.1}}));

// ---- weights files -------------------------------------------------------------------------

TEST(WeightsFile, RoundTripAndSelfDescription) {
  const ModelSpec spec = testing::tiny_spec({{"sharing", "none"}, {"k_per_layer", {8, 4}}});
  Parameters a(spec, MlmModel::parameter_table(spec)), b(spec, MlmModel::parameter_table(spec));
  a.initialize(1);
  TempDir dir;
  const std::string path = (dir.path() / "w.safetensors").string();
  save_weights(path, a);
  load_weights(path, b);
  EXPECT_EQ(0, std::memcmp(a.values().data(), b.values().data(), a.values().layout().bytes()));
  const ModelSpec read = read_weights_spec(path);
  EXPECT_EQ(nlohmann::json(read), nlohmann::json(spec));
  const auto file = safetensors::File::read(path);
  EXPECT_EQ(file.info("layers.0.attn.proj_e").shape, (std::vector<int64_t>{2, 8, 16}));
  EXPECT_EQ(file.metadata().at("format"), "linformer-weights");
}

// A model description from a weights file is checked by the recipe's rules and model checks.
TEST(ModelSpec, DescriptionsAreCheckedLikeRecipes) {
  auto error_of = [](const nlohmann::json& changes) {
    try {
      testing::tiny_spec(changes);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error_of({{"heads", 3}}), HasSubstr("model.heads = 3 must divide model.d_model = 16"));
  EXPECT_THAT(error_of({{"layers", 0}}), HasSubstr("model.layers = 0 is out of range: must be in [1, 10000]"));
  EXPECT_THAT(error_of({{"k_per_layer", {4, 40}}}), HasSubstr("exceeds data.seq_len = 16"));
  EXPECT_THAT(error_of({{"sharing", "diagonal"}}),
              HasSubstr("model.sharing = \"diagonal\" is not one of none, headwise"));
  EXPECT_THAT(error_of({{"d_model", "wide"}}), HasSubstr("model.d_model = \"wide\" has the wrong type"));
  EXPECT_EQ(error_of({{"sharing", "layerwise"}}), "no error");
  // The serialised spec reads back as the same spec.
  const ModelSpec spec = testing::tiny_spec({{"sharing", "kv"}, {"k_per_layer", {8, 4}}, {"dropout", 0.1}});
  EXPECT_EQ(nlohmann::json(nlohmann::json(spec).get<ModelSpec>()), nlohmann::json(spec));
}

std::string load_error(const std::string& path, Parameters& params) {
  try {
    load_weights(path, params);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(WeightsFile, ClearErrorsForWrongFiles) {
  const ModelSpec spec = testing::tiny_spec();
  Parameters params(spec, MlmModel::parameter_table(spec));
  params.initialize(1);
  TempDir dir;
  const std::string good = (dir.path() / "good.safetensors").string();
  save_weights(good, params);

  // Another shape: k = 8 instead of 4.
  const ModelSpec k8 = testing::tiny_spec({{"k_per_layer", {8, 8}}});
  Parameters other(k8, MlmModel::parameter_table(k8));
  EXPECT_THAT(load_error(good, other),
              HasSubstr("tensor 'layers.0.attn.proj_e' has shape (4, 16), the model needs (8, 16)"));
  // A missing tensor: full attention has no projections, the Linformer model needs them.
  const ModelSpec full_spec = testing::tiny_spec({{"attention", "full"}});
  Parameters full(full_spec, MlmModel::parameter_table(full_spec));
  full.initialize(1);
  const std::string full_path = (dir.path() / "full.safetensors").string();
  save_weights(full_path, full);
  EXPECT_THAT(load_error(full_path, params), HasSubstr("missing tensor 'layers.0.attn.proj_e'"));
  EXPECT_THAT(load_error(good, full), HasSubstr("unexpected tensor 'layers.0.attn.proj_e'"));
  // A wrong dtype.
  std::vector<double> doubles(16 * 40, 0.0);
  std::vector<safetensors::TensorToWrite> tensors;
  for (const auto& p : params.table()) {
    std::vector<int64_t> shape;
    for (int d = 0; d < p.shape.rank(); ++d) shape.push_back(p.shape[d]);
    if (p.name == "embed.tokens")
      tensors.push_back({p.name, safetensors::DType::F64, shape, doubles.data()});
    else
      tensors.push_back({p.name, safetensors::DType::F32, shape, params.value(p.name).data()});
  }
  const std::string f64 = (dir.path() / "f64.safetensors").string();
  safetensors::write(
      f64, tensors, {{"format", "linformer-weights"}, {"format_version", "1"}, {"model", nlohmann::json(spec).dump()}});
  EXPECT_THAT(load_error(f64, params), HasSubstr("tensor 'embed.tokens' is F64, expected F32"));
  // Not a weights file, truncated, and garbage.
  const std::string plain = (dir.path() / "plain.safetensors").string();
  safetensors::write(plain, {}, {});
  EXPECT_THAT(load_error(plain, params), HasSubstr("not a linformer weights file"));
  const std::string bytes = read_file(good);
  EXPECT_THAT(load_error(dir.write("cut.safetensors", bytes.substr(0, bytes.size() - 10)), params),
              HasSubstr("outside the"));
  EXPECT_THAT(load_error(dir.write("junk.safetensors", "hello"), params), HasSubstr("not a safetensors file"));
  EXPECT_THAT(load_error((dir.path() / "none.safetensors").string(), params), HasSubstr("cannot open"));
}

}  // namespace
}  // namespace linformer

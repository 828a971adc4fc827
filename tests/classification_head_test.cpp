// The sequence-classification head of fine-tuning: every gradient element against central
// differences (dropout off and on), and loss, logits and gradients against PyTorch (float64,
// Debian's python3-torch, written from the head's definition in classification_head.h).

#include "linformer/layers/classification_head.h"
#include "linformer/core/fs.h"
#include "linformer/core/rng.h"
#include "model_test_util.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace linformer {
namespace {

using testing::TempDir;

constexpr int64_t kB = 3, kT = 4, kC = 8, kLabels = 3;

// A head of C = 8 and 3 labels on random inputs, weights moved off their initial values.
struct HeadFixture {
  ModelSpec spec = testing::tiny_spec();
  ParameterTable table = [] {
    ParameterTable t;
    ClassificationHead::declare(t, kC, kLabels);
    return t;
  }();
  Parameters params{spec, table};
  Workspace ws{WorkspaceUse::training};
  ClassificationHead head{params, ws, kB, 0.3f};
  std::vector<float> x = std::vector<float>(kB * kT * kC);  // (B, T, C)
  std::vector<float> dx = std::vector<float>(kB * kT * kC);
  std::vector<int32_t> targets = {2, 0, 1};

  HeadFixture() {
    ws.allocate();
    params.initialize(3);
    Rng rng(4);
    for (const auto& p : params.table()) {
      float* v = params.value(p.name).data();
      for (int64_t i = 0; i < p.shape.numel(); ++i) v[i] += 0.3f * rng.normal();
    }
    for (auto& e : x) e = rng.normal();
  }
  TensorView<const float> input() const { return TensorView<const float>(x.data(), Shape{kB, kT, kC}); }
  double loss(const Pass& pass) { return head.forward(input(), targets.data(), 0.0f, pass).loss_sum; }
  // Loss with the gradients of every parameter (zeroed first) and of x in dx.
  double loss_and_gradients(const Pass& pass) {
    params.zero_grads();
    const double l = head.forward(input(), targets.data(), 1.0f, pass).loss_sum;
    head.backward(TensorView<float>(dx.data(), Shape{kB, kT, kC}), pass);
    return l;
  }
};

// Central differences of the summed loss, element by element, for the parameters and x. In
// float with ε = 1e-2, rounding and truncation stay near 1e-5 of the loss; 2e-3 of the
// tensor's largest gradient fails any wrong term.
void expect_gradients_match_differences(bool training) {
  HeadFixture f;
  const Pass pass{training, 99, 5};  // masks depend only on (seed, step): a fixed function
  f.loss_and_gradients(pass);
  const float eps = 1e-2f;
  auto check = [&](const std::string& name, float* values, const float* gradient, int64_t n) {
    const std::vector<float> g(gradient, gradient + n);
    const float largest =
        std::max(std::abs(*std::max_element(g.begin(), g.end())), std::abs(*std::min_element(g.begin(), g.end())));
    ASSERT_GT(largest, 0.0f) << name << ": no gradient at all";
    for (int64_t i = 0; i < n; ++i) {
      const float saved = values[i];
      values[i] = saved + eps;
      const double up = f.loss(pass);
      values[i] = saved - eps;
      const double down = f.loss(pass);
      values[i] = saved;
      EXPECT_NEAR(g[i], (up - down) / (2 * eps), 2e-3 * largest + 1e-5) << name << "[" << i << "]";
    }
  };
  for (const auto& p : f.params.table())
    check(p.name, f.params.value(p.name).data(), f.params.grad(p.name).data(), p.shape.numel());
  check("x", f.x.data(), f.dx.data(), kB * kT * kC);
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t i = kC; i < kT * kC; ++i) EXPECT_EQ(f.dx[b * kT * kC + i], 0.0f) << "a position after the first";
}

TEST(ClassificationHead, GradientsMatchCentralDifferences) { expect_gradients_match_differences(false); }
TEST(ClassificationHead, GradientsMatchCentralDifferencesWithDropout) { expect_gradients_match_differences(true); }

TEST(ClassificationHead, DropoutOnlyWhenTraining) {
  HeadFixture f;
  const double eval = f.loss(Pass{false, 99, 5});
  EXPECT_EQ(f.loss(Pass{false, 7, 1}), eval) << "evaluation depends on the seed";
  EXPECT_NE(f.loss(Pass{true, 99, 5}), eval) << "dropout 0.3 changed nothing in training";
}

// The reference: the head as RoBERTa's classification head (x[:, 0] → dense → tanh → out) and
// a summed cross-entropy, in float64, with autograd's gradients.
const char* kReference = R"(
import json, sys, torch
a = json.load(open(sys.argv[1]))
t = lambda k: torch.tensor(a[k], dtype=torch.float64, requires_grad=True)
x, wd, bd, wo, bo = t("x"), t("classifier.dense.weight"), t("classifier.dense.bias"), t("classifier.out.weight"), t("classifier.out.bias")
logits = torch.tanh(x[:, 0, :] @ wd.T + bd) @ wo.T + bo
loss = torch.nn.functional.cross_entropy(logits, torch.tensor(a["targets"]), reduction="sum")
loss.backward()
flat = lambda v: v.detach().reshape(-1).tolist()
json.dump({"loss": loss.item(), "logits": flat(logits), "x": flat(x.grad), "classifier.dense.weight": flat(wd.grad),
           "classifier.dense.bias": flat(bd.grad), "classifier.out.weight": flat(wo.grad),
           "classifier.out.bias": flat(bo.grad)}, open(sys.argv[2], "w"))
)";

TEST(ClassificationHead, MatchesPyTorch) {
  HeadFixture f;
  const Pass pass{false, 0, 0};
  f.loss(pass);
  const TensorView<float> logits = f.head.logits(kB);
  const std::vector<float> logits_copy(logits.data(), logits.data() + logits.numel());
  const double loss = f.loss_and_gradients(pass);

  nlohmann::json in = {{"targets", f.targets}};
  const auto shaped_x = [&] {
    nlohmann::json rows = nlohmann::json::array();
    for (int64_t b = 0; b < kB; ++b) {
      nlohmann::json positions = nlohmann::json::array();
      for (int64_t t = 0; t < kT; ++t)
        positions.push_back(std::vector<float>(f.x.begin() + (b * kT + t) * kC, f.x.begin() + (b * kT + t + 1) * kC));
      rows.push_back(positions);
    }
    return rows;
  };
  in["x"] = shaped_x();
  for (const auto& p : f.params.table()) {
    const TensorView<float> v = f.params.value(p.name);
    if (p.shape.rank() == 1) {
      in[p.name] = std::vector<float>(v.data(), v.data() + v.numel());
    } else {
      nlohmann::json rows = nlohmann::json::array();
      for (int64_t r = 0; r < p.shape[0]; ++r)
        rows.push_back(std::vector<float>(v.data() + r * p.shape[1], v.data() + (r + 1) * p.shape[1]));
      in[p.name] = rows;
    }
  }
  TempDir dir;
  const std::string script = dir.write("reference.py", kReference);
  const std::string input = dir.write("in.json", in.dump());
  const std::string output = (dir.path() / "out.json").string();
  const auto r = testing::run_command("/usr/bin/python3 " + script + " " + input + " " + output);
  ASSERT_EQ(r.exit_code, 0) << "the PyTorch reference failed (python3-torch is required):\n" << r.output;
  const nlohmann::json ref = nlohmann::json::parse(read_file(output));

  // fp32 against fp64: relative to each tensor's largest value (errors seen near 1e-7).
  const auto expect_close = [](const std::string& name, const float* ours, const std::vector<double>& theirs) {
    double largest = 0, worst = 0;
    for (size_t i = 0; i < theirs.size(); ++i) {
      largest = std::max(largest, std::abs(theirs[i]));
      worst = std::max(worst, std::abs(ours[i] - theirs[i]));
    }
    EXPECT_LE(worst, 2e-5 * std::max(largest, 1e-12)) << name << ": max difference " << worst << " of " << largest;
  };
  EXPECT_NEAR(loss, ref["loss"].get<double>(), 2e-5 * std::abs(ref["loss"].get<double>()));
  expect_close("logits", logits_copy.data(), ref["logits"].get<std::vector<double>>());
  expect_close("x", f.dx.data(), ref["x"].get<std::vector<double>>());
  for (const auto& p : f.params.table())
    expect_close(p.name, f.params.grad(p.name).data(), ref[p.name].get<std::vector<double>>());
}

}  // namespace
}  // namespace linformer

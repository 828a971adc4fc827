// ContextBreakdown: which masked targets are copyable from their row, and their scores.

#include "linformer/infer/context_breakdown.h"
#include "linformer/data/special_tokens.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace linformer {
namespace {

TEST(ContextBreakdown, GroupsTargetsByWhetherTheirWordIsElsewhereInTheRow) {
  using data::kBosId, data::kMaskId, data::kPadId;
  // Two rows of n = 6. Row 0 (length 5): 11 is masked at t = 2 and occurs nowhere else; 10 is
  // masked at t = 4 and occurs at t = 1. Row 1 (length 6): 13 is masked at t = 2 and occurs at
  // t = 3; 14 is an unchanged target at t = 5 (the 10% kept as they are) and occurs only there; 12
  // occurs in row 0 only, so row 1's target 12 at t = 4 is not in its context.
  data::Batch batch;
  batch.rows = 2;
  batch.seq_len = 6;
  batch.input = {kBosId, 10, kMaskId, 12, kMaskId, kPadId,  //
                 kBosId, 15, kMaskId, 13, kMaskId, 14};
  batch.lengths = {5, 6};
  batch.target_positions = {2, 4, 8, 10, 11};
  batch.target_ids = {11, 10, 13, 12, 14};
  const bool expected_in_context[] = {false, true, true, false, false};
  constexpr int64_t V = 16;
  std::vector<float> logits(5 * V);  // (M, V)
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)));
  for (int j = 0; j < 5; ++j)
    logits[j * V + batch.target_ids[j]] = j == 1 ? 3.0f : -2.0f;  // only the second is predicted
  ContextBreakdown b;
  b.add(batch, TensorView<const float>(logits.data(), Shape{5, V}), nullptr);

  EvalResult in, out;
  for (int j = 0; j < 5; ++j) {
    long double sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp(static_cast<long double>(logits[j * V + v]));
    const double nll = static_cast<double>(std::log(sum) - logits[j * V + batch.target_ids[j]]);
    EvalResult& g = expected_in_context[j] ? in : out;
    g.loss_sum += nll;
    ++g.masked;
  }
  EXPECT_EQ(b.in_context.masked, 2);
  EXPECT_EQ(b.not_in_context.masked, 3);
  EXPECT_NEAR(b.in_context.loss_sum, in.loss_sum, 1e-9);
  EXPECT_NEAR(b.not_in_context.loss_sum, out.loss_sum, 1e-9);
  EXPECT_EQ(b.in_context.correct, 1);
  EXPECT_EQ(b.not_in_context.correct, 0);
}

}  // namespace
}  // namespace linformer

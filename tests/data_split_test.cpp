// Train/valid/test assignment: fractions, determinism, and the held-out minimum.

#include "linformer/data/split.h"

#include <gtest/gtest.h>

#include <array>

namespace linformer::data {
namespace {

std::array<int, 3> count(const SplitPlan& plan, int documents) {
  std::array<int, 3> n{};
  for (int i = 0; i < documents; ++i) ++n[static_cast<size_t>(plan.of(i))];
  return n;
}

TEST(Split, FractionsHoldOnLargeCorpora) {
  const int docs = 100000;
  const auto n = count(SplitPlan(docs, 0.05, 0.1, 7), docs);
  // Binomial σ: sqrt(0.05·0.95/1e5) ≈ 0.0007 and 0.00095; allow 5σ.
  EXPECT_NEAR(n[1] / double(docs), 0.05, 0.0035);
  EXPECT_NEAR(n[2] / double(docs), 0.10, 0.005);
  EXPECT_EQ(n[0] + n[1] + n[2], docs);
}

TEST(Split, DeterministicInSeedAndIndexAndStableAsTheCorpusGrows) {
  const SplitPlan a(1000, 0.1, 0.1, 3), b(1000, 0.1, 0.1, 3), c(1000, 0.1, 0.1, 4), longer(5000, 0.1, 0.1, 3);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(a.of(i), b.of(i));
    EXPECT_EQ(a.of(i), longer.of(i)) << "appending documents must not move existing ones";
    differ += a.of(i) != c.of(i);
  }
  EXPECT_GT(differ, 50) << "another seed gives another split";
}

TEST(Split, SmallCorporaStillGetOneHeldOutDocumentEach) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    for (int docs : {3, 4, 10}) {
      const auto n = count(SplitPlan(docs, 0.01, 0.01, seed), docs);
      EXPECT_GE(n[1], 1) << "seed " << seed << ", " << docs << " documents";
      EXPECT_GE(n[2], 1) << "seed " << seed << ", " << docs << " documents";
      EXPECT_GE(n[0], 1) << "seed " << seed << ", " << docs << " documents";
    }
  }
  // A zero fraction means none, and fewer than 3 documents are never forced out of train.
  EXPECT_EQ(count(SplitPlan(50, 0.0, 0.0, 1), 50)[0], 50);
  EXPECT_EQ(count(SplitPlan(2, 0.01, 0.01, 1), 2)[0], 2);
}

TEST(Split, ForcedDocumentsAreTheExtremeDraws) {
  const SplitPlan plan(5, 0.001, 0.001, 11);
  int lowest = 0, highest = 0;
  for (int i = 1; i < 5; ++i) {
    if (plan.draw(i) < plan.draw(lowest)) lowest = i;
    if (plan.draw(i) > plan.draw(highest)) highest = i;
  }
  EXPECT_EQ(plan.of(lowest), Split::valid);
  EXPECT_EQ(plan.of(highest), Split::test);
}

}  // namespace
}  // namespace linformer::data

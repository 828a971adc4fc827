#include "linformer/core/tensor.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace linformer {
namespace {

TEST(Shape, NumelStridesAndText) {
  const Shape s{2, 3, 4};
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s.contiguous_strides(), (Shape{12, 4, 1}));
  EXPECT_EQ(s.str(), "(2, 3, 4)");
  EXPECT_EQ(s.without_axis(1), (Shape{2, 4}));
  EXPECT_EQ(Shape{}.numel(), 1);
}

TEST(Shape, RejectsBadExtents) {
  EXPECT_THROW((Shape{2, -1}), Error);
  EXPECT_THROW((Shape{1, 2, 3, 4, 5}), Error);
}

class TensorViewTest : public ::testing::Test {
 protected:
  std::vector<float> data = std::vector<float>(24);
  TensorView<float> t{data.data(), Shape{2, 3, 4}};
  void SetUp() override { std::iota(data.begin(), data.end(), 0.0f); }
};

TEST_F(TensorViewTest, ContiguousIndexing) {
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t(1, 2, 3), 23.0f);
  EXPECT_EQ(t(0, 1, 0), 4.0f);
  EXPECT_EQ(t.at(1, 0, 2), 14.0f);
}

TEST_F(TensorViewTest, CheckedAccessRejectsBadIndices) {
  EXPECT_THROW(t.at(2, 0, 0), Error);
  EXPECT_THROW(t.at(0, 0), Error);
  EXPECT_THROW(t.at(0, -1, 0), Error);
}

TEST_F(TensorViewTest, TransposeIsAStrideSwap) {
  const auto tt = t.transpose(1, 2);  // (2, 4, 3)
  EXPECT_EQ(tt.shape(), (Shape{2, 4, 3}));
  EXPECT_FALSE(tt.is_contiguous());
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) EXPECT_EQ(tt(b, j, i), t(b, i, j));
  EXPECT_EQ(tt.data(), t.data());
}

TEST_F(TensorViewTest, SliceAndSelectShareMemory) {
  const auto rows = t.slice(1, 1, 3);  // (2, 2, 4)
  EXPECT_EQ(rows.shape(), (Shape{2, 2, 4}));
  EXPECT_EQ(rows(1, 0, 0), t(1, 1, 0));
  rows(0, 1, 2) = -1.0f;
  EXPECT_EQ(t(0, 2, 2), -1.0f);

  const auto second = t.select(0, 1);  // (3, 4)
  EXPECT_EQ(second.shape(), (Shape{3, 4}));
  EXPECT_EQ(second(2, 3), 23.0f);
  const auto column = t.select(2, 1);  // (2, 3), strides (12, 4)
  EXPECT_EQ(column.strides(), (Shape{12, 4}));
  EXPECT_EQ(column(1, 2), t(1, 2, 1));

  EXPECT_THROW(t.slice(1, 2, 4), Error);
  EXPECT_THROW(t.select(3, 0), Error);
}

TEST_F(TensorViewTest, ReshapeOnlyWhenContiguous) {
  const auto flat = t.reshape(Shape{6, 4});
  EXPECT_EQ(flat(5, 3), 23.0f);
  EXPECT_THROW(t.reshape(Shape{5, 5}), Error);
  EXPECT_THROW(t.transpose(0, 1).reshape(Shape{24}), Error);
}

TEST_F(TensorViewTest, ConvertsToConstView) {
  TensorView<const float> c = t;
  EXPECT_EQ(c(1, 1, 1), t(1, 1, 1));
  EXPECT_EQ(c.shape(), t.shape());
}

}  // namespace
}  // namespace linformer

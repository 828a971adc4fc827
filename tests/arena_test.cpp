#include "linformer/core/arena.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace linformer {
namespace {

TEST(Arena, OffsetsAreAlignedAndViewsDisjoint) {
  ArenaLayout layout(sizeof(float));
  const int a = layout.add("a", Shape{3});        // 3 floats, then padding to 16
  const int b = layout.add("b", Shape{2, 5});     // starts at 16
  const int c = layout.add("c", Shape{4, 4, 4});  // starts at 32
  EXPECT_EQ(layout.entry(a).offset, 0u);
  EXPECT_EQ(layout.entry(b).offset, 16u);
  EXPECT_EQ(layout.entry(c).offset, 32u);
  EXPECT_EQ(layout.numel(), 96u);

  Arena<float> arena(layout);
  for (int i = 0; i < 3; ++i) {
    const auto v = arena.view(i);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % kArenaAlignment, 0u) << layout.entry(i).name;
  }
  EXPECT_EQ(arena.view("b").shape(), (Shape{2, 5}));
  EXPECT_EQ(arena.view("b").data(), arena.data() + 16);
}

TEST(Arena, SkewPlacesEveryTensorTheSameBytesPastACacheLine) {
  ArenaLayout layout(sizeof(float), 16);
  const int a = layout.add("a", Shape{3});   // 4 floats of skew, 3 floats, padding to 16
  const int b = layout.add("b", Shape{17});  // 16 + 4
  const int c = layout.add("c", Shape{1});   // 48 + 4
  EXPECT_EQ(layout.entry(a).offset, 4u);
  EXPECT_EQ(layout.entry(b).offset, 20u);
  EXPECT_EQ(layout.entry(c).offset, 52u);
  EXPECT_EQ(layout.numel(), 53u);
  Arena<float> arena(layout);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(arena.view(i).data()) % kArenaAlignment, 16u) << layout.entry(i).name;
  arena.view("c").data()[0] = 1.0f;                     // the last element is inside the allocation
  EXPECT_THROW(ArenaLayout(sizeof(float), 6), Error);   // not whole elements
  EXPECT_THROW(ArenaLayout(sizeof(float), 64), Error);  // not below the alignment
}

TEST(Arena, StartsZeroedAndZeroClearsEverything) {
  ArenaLayout layout(sizeof(float));
  layout.add("w", Shape{10, 10});
  layout.add("b", Shape{10});
  Arena<float> arena(layout);
  for (size_t i = 0; i < arena.numel(); ++i) ASSERT_EQ(arena.data()[i], 0.0f);
  for (size_t i = 0; i < arena.numel(); ++i) arena.data()[i] = 1.5f;
  arena.zero();
  for (size_t i = 0; i < arena.numel(); ++i) ASSERT_EQ(arena.data()[i], 0.0f);
}

TEST(Arena, RejectsDuplicateAndUnknownNames) {
  ArenaLayout layout(sizeof(float));
  layout.add("w", Shape{2});
  EXPECT_THROW(layout.add("w", Shape{3}), Error);
  EXPECT_THROW(layout.add("", Shape{3}), Error);
  Arena<float> arena(layout);
  EXPECT_THROW(arena.view("nope"), Error);
}

TEST(Arena, ElementSizeMustMatch) {
  ArenaLayout layout(sizeof(double));
  layout.add("x", Shape{4});
  EXPECT_THROW(Arena<float>{layout}, Error);
  Arena<double> ok(layout);
  EXPECT_EQ(ok.view("x").numel(), 4);
}

TEST(Arena, EmptyLayoutIsFine) {
  Arena<float> arena{ArenaLayout(sizeof(float))};
  EXPECT_EQ(arena.numel(), 0u);
  arena.zero();
}

}  // namespace
}  // namespace linformer

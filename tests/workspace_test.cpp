// The activation workspace: buffers declared with their shape once, viewed per call.
#include "linformer/nn/workspace.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace linformer {
namespace {

TEST(Workspace, AViewHasTheReservedShapeForTheCallsExtents) {
  Workspace ws;
  const Buffer<float> probs = ws.reserve("probs", {Dim::batch(4), 2, Dim::tokens(8), Dim::tokens(8)});  // (B, H, T, T)
  const Buffer<float> rows = ws.reserve("rows", {Dim::rows(10), 3});                                    // (N, 3)
  ws.allocate();

  const TensorView<float> p = ws.view(probs, {3, 5});
  EXPECT_EQ(p.shape(), (Shape{3, 2, 5, 5}));
  EXPECT_EQ(ws.view(rows, Extents::rows(7)).shape(), (Shape{7, 3}));
  EXPECT_EQ(ws.view(probs, {4, 8}).shape(), (Shape{4, 2, 8, 8}));  // the largest
  // Distinct buffers do not overlap.
  const TensorView<float> r = ws.view(rows, Extents::rows(10));
  const bool apart = r.data() >= p.data() + 4 * 2 * 8 * 8 || r.data() + r.numel() <= p.data();
  EXPECT_TRUE(apart);
}

TEST(Workspace, AnExtentAboveTheReservedLargestIsRefusedNamingTheBuffer) {
  Workspace ws;
  const Buffer<float> b = ws.reserve("attn.ctx", {Dim::batch(2), Dim::tokens(16), 4});
  ws.allocate();
  try {
    ws.view(b, {2, 17});
    FAIL() << "T = 17 was accepted for a buffer reserved for T ≤ 16";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'attn.ctx': T = 17, reserved for at most 16"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ws.view(b, {3, 16}), Error);
}

TEST(Workspace, SharedBuffersAreSizedForTheLargestAndEachHandleKeepsItsShape) {
  Workspace ws;
  // Two layers of different K share a scratch buffer (nonuniform k).
  const Buffer<float> small = ws.reserve_shared("d_probs", {Dim::batch(2), 4, Dim::tokens(8), 16});
  const Buffer<float> large = ws.reserve_shared("d_probs", {Dim::batch(2), 4, Dim::tokens(8), 32});
  ws.allocate();
  const TensorView<float> a = ws.view(small, {2, 8}), b = ws.view(large, {2, 8});
  EXPECT_EQ(a.data(), b.data());
  EXPECT_EQ(a.shape(), (Shape{2, 4, 8, 16}));
  EXPECT_EQ(b.shape(), (Shape{2, 4, 8, 32}));
  for (int64_t i = 0; i < b.numel(); ++i) b.data()[i] = 1.0f;  // the largest fits (ASan would tell)
  EXPECT_GE(ws.bytes(), sizeof(float) * 2 * 4 * 8 * 32);
}

TEST(Workspace, Bf16BuffersTakeHalfTheBytesAndCannotShareANameWithFloat) {
  Workspace f32, half;
  f32.reserve("x", {Dim::rows(1000), 64});
  half.reserve<bf16>("x", {Dim::rows(1000), 64});
  EXPECT_EQ(f32.planned_bytes() - half.planned_bytes(), 1000 * 64 * sizeof(bf16));  // the same skew on both

  Workspace mixed;
  const Buffer<bf16> b = mixed.reserve<bf16>("a", {3});  // 6 bytes: the next buffer still starts aligned
  const Buffer<float> f = mixed.reserve("b", {5});
  mixed.allocate();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mixed.view(b, {}).data()) % kArenaAlignment,
            reinterpret_cast<uintptr_t>(mixed.view(f, {}).data()) % kArenaAlignment);

  Workspace clash;
  clash.reserve_shared("scratch", {4});
  EXPECT_THROW(clash.reserve_shared<bf16>("scratch", {4}), Error);
}

TEST(Workspace, NamesAreReservedOnceAndBuffersUsedOnlyAfterAllocation) {
  Workspace ws;
  const Buffer<float> b = ws.reserve("h", {4});
  EXPECT_THROW(ws.reserve("h", {4}), Error);         // a private buffer named twice
  EXPECT_THROW(ws.reserve_shared("h", {4}), Error);  // private, then shared
  EXPECT_THROW(ws.view(b, {}), Error);               // before allocate()
  ws.allocate();
  EXPECT_THROW(ws.reserve("late", {4}), Error);
}

TEST(Workspace, AnInferenceWorkspaceSharesCachesAndHasNoBackwardBuffers) {
  Workspace training(WorkspaceUse::training), inference(WorkspaceUse::inference);
  for (Workspace* ws : {&training, &inference}) {
    ws->reserve_cache(0, "attn.ctx", {Dim::rows(8), 4});
    ws->reserve_cache(1, "attn.ctx", {Dim::rows(8), 4});
  }
  const Buffer<float> scratch = inference.reserve_backward("d_ctx", {Dim::rows(8), 4});
  EXPECT_FALSE(scratch);
  EXPECT_TRUE(training.reserve_backward("d_ctx", {Dim::rows(8), 4}));
  EXPECT_GE(training.planned_bytes(), 3 * 8 * 4 * sizeof(float));   // two caches and the scratch
  EXPECT_LT(inference.planned_bytes(), 2 * 8 * 4 * sizeof(float));  // one cache
  inference.allocate();
  EXPECT_THROW(inference.view(scratch, Extents::rows(8)), Error);
}

}  // namespace
}  // namespace linformer

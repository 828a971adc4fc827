// The tests' main: the floating-point mode of the linformer binary (denormals flushed to zero),
// so that kernels are tested as they run.

#include "linformer/kernels/context.h"

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  linformer::flush_denormals_to_zero();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

// The vectorisable exp and erf against libm (double precision) on a dense grid.

#include "linformer/kernels/fast_math.h"

#include <gtest/gtest.h>

#include <cmath>

namespace linformer {
namespace {

TEST(FastMath, ExpRelativeErrorBelow3e7) {
  double worst = 0;
  for (double x = -87.0; x <= 88.0; x += 1e-3) {
    const double exact = std::exp(static_cast<double>(static_cast<float>(x)));
    worst = std::max(worst, std::abs(fast_exp(static_cast<float>(x)) - exact) / exact);
  }
  EXPECT_LT(worst, 3e-7);
  EXPECT_EQ(fast_exp(-1000.0f), fast_exp(-87.0f));  // clamped, no garbage
  EXPECT_FLOAT_EQ(fast_exp(0.0f), 1.0f);
}

TEST(FastMath, ErfAbsoluteErrorBelow5e7) {
  double worst = 0;
  for (double x = -8.0; x <= 8.0; x += 1e-4) {
    const float xf = static_cast<float>(x);
    worst = std::max(worst, std::abs(fast_erf(xf) - std::erf(static_cast<double>(xf))));
  }
  EXPECT_LT(worst, 5e-7);
  EXPECT_EQ(fast_erf(0.0f), 0.0f);
  EXPECT_FLOAT_EQ(fast_erf(30.0f), 1.0f);
  EXPECT_FLOAT_EQ(fast_erf(-30.0f), -1.0f);
  // GELU's derivative passes the exponential it also needs: the same erf, bit for bit.
  for (double x = -6.0; x <= 6.0; x += 1.7e-3) {
    const float xf = static_cast<float>(x);
    ASSERT_EQ(fast_erf_given_gauss(xf, fast_exp(-xf * xf)), fast_erf(xf)) << xf;
  }
}

}  // namespace
}  // namespace linformer

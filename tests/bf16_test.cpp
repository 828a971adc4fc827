// bfloat16 conversions against an independent rounding (the nearer of the two bf16 neighbours,
// measured in double, ties to the even one), and bf16:bf16:f32 matmuls against a double product
// of the rounded operands.

#include "linformer/core/rng.h"
#include "linformer/kernels/bf16.h"
#include "linformer/kernels/context.h"
#include "linformer/kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace linformer {
namespace {

uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

float float_of(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// The exact value of a float's bit pattern in double, decoded from the integer fields (no float
// arithmetic: the tests run with denormals flushed to zero); the infinity after the largest
// finite value counts as 2^128, where rounding with an unbounded exponent would land (IEEE's
// overflow rule).
double exact_value(uint32_t u) {
  const int exponent = static_cast<int>((u >> 23) & 0xffu);
  const uint32_t mantissa = u & 0x7fffffu;
  const double magnitude = exponent == 0      ? std::ldexp(static_cast<double>(mantissa), -149)
                           : exponent == 255 ? std::ldexp(1.0, 128)
                                             : std::ldexp(static_cast<double>(mantissa | 0x800000u), exponent - 150);
  return (u >> 31) ? -magnitude : magnitude;
}

double value_of(uint16_t bits) { return exact_value(static_cast<uint32_t>(bits) << 16); }

// Round to nearest, ties to even, by comparing distances to the two neighbours.
uint16_t reference_rounding(float x) {
  const auto below = static_cast<uint16_t>(bits_of(x) >> 16);  // toward zero
  const auto above = static_cast<uint16_t>(below + 1);         // away from zero
  const double to_below = std::abs(exact_value(bits_of(x)) - value_of(below));
  const double to_above = std::abs(value_of(above) - exact_value(bits_of(x)));
  if (to_below < to_above) return below;
  if (to_above < to_below) return above;
  return (below & 1u) == 0 ? below : above;
}

TEST(Bf16, ConversionRoundsToNearestTiesToEven) {
  std::vector<float> cases = {0.0f, -0.0f, 1.0f, -1.0f, 1.00390625f /* tie, even below */,
                              1.01171875f /* tie, odd below */, 3.0e38f, 3.4e38f, -3.4e38f,
                              std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                              std::numeric_limits<float>::denorm_min(), 1e-40f, -1e-40f,
                              std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  Rng rng(3);
  for (int i = 0; i < 100000; ++i) cases.push_back(std::ldexp(rng.normal(), static_cast<int>(rng.uniform() * 80) - 40));
  for (int i = 0; i < 20000; ++i)  // exact ties: the lower 16 bits 0x8000
    cases.push_back(float_of((static_cast<uint32_t>(rng.uniform() * 0x7f7fu) << 16) | 0x8000u));
  int ties = 0;
  for (const float x : cases) {
    const uint16_t got = to_bf16(x).bits;
    ASSERT_EQ(got, reference_rounding(x)) << "x = " << x << " (bits " << std::hex << bits_of(x) << ")";
    ties += (bits_of(x) & 0xffffu) == 0x8000u;
  }
  EXPECT_GT(ties, 10000);
  EXPECT_TRUE(std::isnan(to_float(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(to_float(to_bf16(float_of(0x7f800001u)))));  // a NaN rounding up must not become inf
}

TEST(Bf16, ArrayConversionsMatchTheScalarOnesAndBf16ValuesRoundTrip) {
  const size_t n = 10007;
  std::vector<float> x(n);
  Rng rng(4);
  for (auto& v : x) v = 100.0f * rng.normal();
  std::vector<bf16> y(n);
  std::vector<float> back(n);
  convert_to_bf16(x.data(), y.data(), n);
  convert_to_float(y.data(), back.data(), n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(y[i].bits, to_bf16(x[i]).bits) << i;
    ASSERT_EQ(back[i], to_float(y[i])) << i;
    ASSERT_EQ(to_bf16(back[i]).bits, y[i].bits) << i;  // a bf16 value is exact in f32
    ASSERT_LE(std::abs(back[i] - x[i]), std::ldexp(std::abs(x[i]), -8)) << i;  // half an ulp of 8 bits
  }
}

std::vector<bf16> random_bf16(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<bf16> v(n);
  for (auto& x : v) x = to_bf16(rng.normal());
  return v;
}

TEST(Bf16Matmul, MatchesADoubleProductOfTheOperands) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "no avx512_bf16 on this CPU (" << dnnl_cpu_isa_name() << ")";
  const int64_t M = 37, K = 301, N = 29;
  const auto a = random_bf16(M * K, 1), bt = random_bf16(N * K, 2);  // b stored transposed (N, K)
  std::vector<float> bias(N), c(M * N, 7.0f);
  for (int64_t j = 0; j < N; ++j) bias[j] = 0.1f * static_cast<float>(j);
  const TensorView<const bf16> av(a.data(), Shape{M, K});
  const TensorView<const bf16> bv(bt.data(), Shape{K, N}, Shape{1, K});
  auto check = [&](const std::vector<float>& before, bool with_bias) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double ref = before[i * N + j] + (with_bias ? bias[j] : 0.0), magnitude = 0;
        for (int64_t p = 0; p < K; ++p) {
          const double term = static_cast<double>(to_float(a[i * K + p])) * to_float(bt[j * K + p]);
          ref += term;
          magnitude += std::abs(term);
        }
        // f32 accumulation of K exact products (a bf16 product is exact in f32).
        ASSERT_NEAR(c[i * N + j], ref, 1e-6 * magnitude + 1e-6) << i << "," << j;
      }
  };
  matmul(av, bv, TensorView<float>(c.data(), Shape{M, N}), Accumulate::overwrite, bias.data());
  check(std::vector<float>(M * N, 0.0f), true);
  const std::vector<float> before = c;
  matmul(av, bv, TensorView<float>(c.data(), Shape{M, N}), Accumulate::add);
  check(before, false);
  bool bf16_kernel = false;
  for (const auto& [name, count] : matmul_implementations()) bf16_kernel |= name.find("bf16") != std::string::npos;
  EXPECT_TRUE(bf16_kernel) << "no oneDNN bf16 kernel among the matmul primitives built";
}

TEST(Bf16Matmul, WithoutTheInstructionsItFailsNamingTheCpu) {
  if (cpu_has_bf16()) GTEST_SKIP() << "this CPU has avx512_bf16";
  const std::vector<bf16> a(4, to_bf16(1.0f));
  std::vector<float> c(4);
  try {
    matmul(TensorView<const bf16>(a.data(), Shape{2, 2}), TensorView<const bf16>(a.data(), Shape{2, 2}),
           TensorView<float>(c.data(), Shape{2, 2}));
    FAIL() << "a bf16 matmul ran without avx512_bf16";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs a CPU with avx512_bf16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace linformer

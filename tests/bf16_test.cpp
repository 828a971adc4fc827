// bfloat16 conversions against an independent rounding (the nearer of the two bf16 neighbours,
// measured in double, ties to the even one), and bf16:bf16:f32 matmuls against a double product
// of the rounded operands.

#include "linformer/kernels/bf16.h"
#include "linformer/core/rng.h"
#include "linformer/kernels/context.h"
#include "linformer/kernels/matmul.h"

#include <gtest/gtest.h>

#include <array>
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
  const double magnitude = exponent == 0     ? std::ldexp(static_cast<double>(mantissa), -149)
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
  std::vector<float> cases = {0.0f,
                              -0.0f,
                              1.0f,
                              -1.0f,
                              1.00390625f /* tie, even below */,
                              1.01171875f /* tie, odd below */,
                              3.0e38f,
                              3.4e38f,
                              -3.4e38f,
                              std::numeric_limits<float>::max(),
                              std::numeric_limits<float>::min(),
                              std::numeric_limits<float>::denorm_min(),
                              1e-40f,
                              -1e-40f,
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity()};
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
    ASSERT_EQ(to_bf16(back[i]).bits, y[i].bits) << i;                          // a bf16 value is exact in f32
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

// A bf16 result: the same f32 accumulation, each element rounded once to nearest even; per head
// and transposed, as the attention scores use it.
TEST(Bf16Matmul, Bf16ResultsAreTheRoundedF32Products) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "no avx512_bf16 on this CPU (" << dnnl_cpu_isa_name() << ")";
  const int64_t B = 2, H = 3, T = 19, S = 23, D = 16;
  const auto q = random_bf16(B * T * H * D, 3), k = random_bf16(B * S * H * D, 4);
  // Heads are column blocks of (B, rows, H·D) rows, as in the attention's caches.
  const TensorView<const bf16> qh(q.data(), Shape{B, H, T, D}, Shape{T * H * D, D, H * D, 1});
  const TensorView<const bf16> kt(k.data(), Shape{B, H, D, S}, Shape{S * H * D, D, 1, H * D});
  std::vector<float> f32(B * H * T * S);
  std::vector<bf16> rounded(B * H * T * S, to_bf16(9.0f));
  matmul(qh, kt, TensorView<float>(f32.data(), Shape{B, H, T, S}));
  matmul(qh, kt, TensorView<bf16>(rounded.data(), Shape{B, H, T, S}));
  int64_t exact = 0;
  for (size_t i = 0; i < f32.size(); ++i) {
    // The f32 result rounded, or its neighbour where the two kernels summed in another order
    // and the f32 sums sit on either side of a rounding boundary.
    const int diff = std::abs(static_cast<int>(rounded[i].bits) - static_cast<int>(to_bf16(f32[i]).bits));
    ASSERT_LE(diff, 1) << i << ": " << to_float(rounded[i]) << " against " << f32[i];
    exact += diff == 0;
  }
  EXPECT_GT(exact, static_cast<int64_t>(0.99 * static_cast<double>(f32.size())));
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

// Element (i, j, k, l) of a rank-≤4 view, with missing leading axes at 0.
template <class T>
T& at(const TensorView<T>& v, const std::array<int64_t, 4>& idx) {
  int64_t offset = 0;
  for (int d = 0; d < v.rank(); ++d) offset += idx[4 - v.rank() + d] * v.stride(d);
  return v.data()[offset];
}

// Every index of a shape (rank ≤ 4), missing leading axes at 0.
template <class F>
void for_each_index(const Shape& s, F f) {
  std::array<int64_t, 4> size{1, 1, 1, 1};
  for (int d = 0; d < s.rank(); ++d) size[4 - s.rank() + d] = s[d];
  for (int64_t i = 0; i < size[0]; ++i)
    for (int64_t j = 0; j < size[1]; ++j)
      for (int64_t k = 0; k < size[2]; ++k)
        for (int64_t l = 0; l < size[3]; ++l) f(std::array<int64_t, 4>{i, j, k, l});
}

TEST(Bf16, StridedCopiesRoundEveryElementAndAreDenseInTheViewsOwnOrder) {
  const int64_t B = 2, T = 5, H = 3, D = 4, C = H * D;
  std::vector<float> storage(B * T * 3 * C);
  Rng rng(7);
  for (auto& v : storage) v = rng.normal();
  const TensorView<const float> qkv(storage.data(), Shape{B, T, 3 * C});
  // Keys of every head (B, H, T, D): a slice of qkv's rows; their transpose (B, H, D, T); a plain
  // transpose of a matrix; a contiguous matrix.
  const TensorView<const float> keys(storage.data() + C, Shape{B, H, T, D}, Shape{T * 3 * C, D, 3 * C, 1});
  const TensorView<const float> matrix(storage.data(), Shape{B * T, 3 * C});
  for (const auto& view : {keys, keys.transpose(2, 3), matrix.transpose(0, 1), matrix}) {
    std::vector<bf16> out(view.numel() + 1, bf16{0xdeadu});
    const TensorView<const bf16> copy = convert_to_bf16(view, out.data());
    ASSERT_EQ(copy.shape(), view.shape());
    std::vector<int> written(view.numel(), 0);
    for_each_index(view.shape(), [&](const std::array<int64_t, 4>& idx) {
      const bf16& got = at(copy, idx);
      ASSERT_EQ(got.bits, to_bf16(at(view, idx)).bits) << view.shape().str() << " strides " << view.strides().str();
      const auto offset = &got - out.data();
      ASSERT_TRUE(offset >= 0 && offset < view.numel()) << offset;
      ++written[offset];
    });
    for (const int w : written) ASSERT_EQ(w, 1) << "the copy is not dense";
    EXPECT_EQ(out.back().bits, 0xdeadu) << "written past the copy";
    // The innermost axis stays innermost: a transpose of a row-major matrix stays a transpose.
    int innermost = 0;
    for (int d = 0; d < view.rank(); ++d)
      if (view.stride(d) == 1) innermost = d;
    EXPECT_EQ(copy.stride(innermost), 1) << view.strides().str();
  }
}

// Switches the f32 matmul to bf16 operands for a scope.
struct Bf16Operands {
  Bf16Operands() { set_matmul_bf16_operands(true); }
  ~Bf16Operands() { set_matmul_bf16_operands(false); }
};

TEST(Bf16Matmul, F32ViewsWithBf16OperandsGiveTheProductOfTheRoundedOperands) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "no avx512_bf16 on this CPU (" << dnnl_cpu_isa_name() << ")";
  // Attention's shapes: Q·Kᵀ on head slices of one (B, T, 3C) buffer, then a Linformer
  // projection E (K, T) broadcast over the batch, with a bias and accumulating.
  const int64_t B = 2, T = 67, H = 3, D = 40, C = H * D, K = 19;
  std::vector<float> qkv(B * T * 3 * C), e(K * T), bias(D);
  Rng rng(11);
  for (auto& v : qkv) v = rng.normal();
  for (auto& v : e) v = rng.normal();
  for (auto& v : bias) v = rng.normal();
  const TensorView<const float> q(qkv.data(), Shape{B, H, T, D}, Shape{T * 3 * C, D, 3 * C, 1});
  const TensorView<const float> k(qkv.data() + C, Shape{B, H, T, D}, Shape{T * 3 * C, D, 3 * C, 1});
  const TensorView<const float> ev(e.data(), Shape{1, 1, K, T});
  std::vector<float> scores(B * H * T * T), projected(B * H * K * D, 0.5f);
  const TensorView<float> sv(scores.data(), Shape{B, H, T, T}), pv(projected.data(), Shape{B, H, K, D});
  const std::vector<float> before = projected;
  {
    const Bf16Operands on;
    matmul(q, k.transpose(2, 3), sv);
    matmul(ev, k, pv, Accumulate::add, bias.data());
  }
  // What a bf16 product must give: exact products of the rounded operands (a bf16 product is
  // exact in f32), summed; f32 accumulation allows 1e-6 of the terms' magnitude.
  auto rounded = [](float x) { return static_cast<double>(to_float(to_bf16(x))); };
  int differs_from_f32 = 0;
  auto check = [&](const TensorView<const float>& a, const TensorView<const float>& b, const TensorView<float>& c,
                   const float* before_c, const float* add_bias) {
    for_each_index(c.shape(), [&](const std::array<int64_t, 4>& idx) {
      const int64_t inner = a.size(a.rank() - 1);
      double ref = (before_c ? before_c[&at(c, idx) - c.data()] : 0.0) + (add_bias ? add_bias[idx[3]] : 0.0);
      double unrounded = ref, magnitude = 0;
      for (int64_t p = 0; p < inner; ++p) {
        const std::array<int64_t, 4> ia{a.size(0) == 1 ? 0 : idx[0], a.size(1) == 1 ? 0 : idx[1], idx[2], p};
        const std::array<int64_t, 4> ib{b.size(0) == 1 ? 0 : idx[0], b.size(1) == 1 ? 0 : idx[1], p, idx[3]};
        const double term = rounded(at(a, ia)) * rounded(at(b, ib));
        ref += term;
        unrounded += static_cast<double>(at(a, ia)) * at(b, ib);
        magnitude += std::abs(term);
      }
      ASSERT_NEAR(at(c, idx), ref, 1e-6 * magnitude + 1e-6)
          << idx[0] << "," << idx[1] << "," << idx[2] << "," << idx[3];
      differs_from_f32 += std::abs(at(c, idx) - unrounded) > 1e-4 * magnitude;
    });
  };
  check(q, k.transpose(2, 3), sv, nullptr, nullptr);
  check(ev, k, pv, before.data(), bias.data());
  // The operands really were rounded: most results differ from the f32 product by more than
  // f32 rounding could explain.
  EXPECT_GT(differs_from_f32, static_cast<int>(scores.size() + projected.size()) / 2);
  bool bf16_kernel = false;
  for (const auto& [name, count] : matmul_implementations()) bf16_kernel |= name.find("bf16") != std::string::npos;
  EXPECT_TRUE(bf16_kernel) << "no oneDNN bf16 kernel among the matmul primitives built";
}

TEST(Bf16Matmul, Bf16OperandsWithoutTheInstructionsFailNamingTheCpu) {
  if (cpu_has_bf16()) GTEST_SKIP() << "this CPU has avx512_bf16";
  try {
    set_matmul_bf16_operands(true);
    FAIL() << "bf16 operands switched on without avx512_bf16";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs a CPU with avx512_bf16"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(matmul_bf16_operands());
}

}  // namespace
}  // namespace linformer

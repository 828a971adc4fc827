#pragma once
// exp and erf for float that the compiler can vectorise (libm's calls cannot be; no branches,
// only min/max/fabs/copysign, which compile to vector instructions), for the
// elementwise kernels. Accuracy, checked against libm in tests/fast_math_test.cpp:
//   fast_exp: relative error < 3e-7 for x in [-87, 88] (smaller x gives 0)
//   fast_erf: absolute error < 5e-7 everywhere (Abramowitz & Stegun 7.1.26: 1.5e-7, plus float rounding)

#include <cmath>
#include <cstdint>

namespace linformer {

inline float fast_exp(float x) {
  // x = k ln2 + r with |r| ≤ ln2/2; e^x = 2^k e^r, e^r by its Taylor polynomial of degree 7.
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  // Round to nearest by adding and subtracting 1.5·2^23 (vectorises, unlike roundf).
  const float k = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (x - k * 0.693145751953125f) - k * 1.42860682030941723212e-6f;  // ln2 in two parts
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(k) + 127) << 23;  // 2^k
  return p * __builtin_bit_cast(float, bits);                  // (memcpy here would stop vectorisation)
}

// erf(x) given gauss = fast_exp(-x * x), for callers that need that exponential too (GELU's
// derivative): fast_erf(x) == fast_erf_given_gauss(x, fast_exp(-x * x)), bit for bit.
inline float fast_erf_given_gauss(float x, float gauss) {
  // erf(|x|) = 1 - (a1 t + a2 t² + a3 t³ + a4 t⁴ + a5 t⁵) e^{-x²}, t = 1 / (1 + p|x|).
  const float ax = std::fabs(x);
  const float t = 1.0f / (1.0f + 0.3275911f * ax);
  float poly = 1.061405429f;
  poly = poly * t - 1.453152027f;
  poly = poly * t + 1.421413741f;
  poly = poly * t - 0.284496736f;
  poly = poly * t + 0.254829592f;
  const float y = 1.0f - poly * t * gauss;
  return std::copysign(y, x);
}

inline float fast_erf(float x) { return fast_erf_given_gauss(x, fast_exp(-x * x)); }

}  // namespace linformer

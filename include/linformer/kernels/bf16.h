#pragma once
// bfloat16: the upper 16 bits of an IEEE float (8 exponent bits, 7 mantissa bits), the operand
// type of the bf16 matmuls (matmul.h) on CPUs with avx512_bf16. Conversions round to nearest,
// ties to even, as the CPU's vcvtneps2bf16 does; NaN stays NaN.

#include "linformer/core/tensor.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace linformer {

struct bf16 {
  uint16_t bits;
};
static_assert(sizeof(bf16) == 2, "bf16 is two bytes");

inline bf16 to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<uint16_t>((u >> 16) | 0x40u)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return {static_cast<uint16_t>(u >> 16)};
}

inline float to_float(bf16 x) {
  const uint32_t u = static_cast<uint32_t>(x.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// out[i] = to_bf16(in[i]) for i < n, over the OpenMP threads.
void convert_to_bf16(const float* in, bf16* out, size_t n);
// out[i] = to_float(in[i]) for i < n, over the OpenMP threads.
void convert_to_float(const bf16* in, float* out, size_t n);
// x[i] = to_float(to_bf16(x[i])) for i < n: what a bf16-result matmul would have written, kept in
// f32 (for the paths that round each matmul's operands themselves).
void round_to_bf16_values(float* x, size_t n);

// A bf16 copy of a strided view, written densely into `out` (in.numel() values) in the view's own
// axis order by stride, so a transpose stays a transpose and a head slice of a wider row becomes
// a dense block: the returned view (same shape, new strides) is what a bf16 matmul reads.
TensorView<const bf16> convert_to_bf16(TensorView<const float> in, bf16* out);

}  // namespace linformer

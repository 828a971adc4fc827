#include "linformer/kernels/bf16.h"

#include <cstdint>

namespace linformer {

void convert_to_bf16(const float* in, bf16* out, size_t n) {
  const auto count = static_cast<int64_t>(n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) out[i] = to_bf16(in[i]);
}

void convert_to_float(const bf16* in, float* out, size_t n) {
  const auto count = static_cast<int64_t>(n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) out[i] = to_float(in[i]);
}

}  // namespace linformer

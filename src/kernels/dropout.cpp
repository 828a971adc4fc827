#include "linformer/kernels/dropout.h"

#include "linformer/core/rng.h"

#include <cstring>

namespace linformer {

void dropout_apply(const float* x, float* y, int64_t n, float p, uint64_t seed, uint64_t stream) {
  if (p <= 0.0f) {
    if (x != y) std::memcpy(y, x, sizeof(float) * static_cast<size_t>(n));
    return;
  }
  const float scale = 1.0f / (1.0f - p);
  // Keep when the top 24 bits of the word, as a fraction, are ≥ p.
  const uint32_t threshold = static_cast<uint32_t>(static_cast<double>(p) * 16777216.0);
  const PhiloxKey key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  const int64_t blocks = (n + 3) / 4;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const PhiloxCounter words = philox4x32_10(
        {static_cast<uint32_t>(b), static_cast<uint32_t>(static_cast<uint64_t>(b) >> 32),
         static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
        key);
    for (int64_t j = 0; j < 4 && 4 * b + j < n; ++j) {
      const int64_t i = 4 * b + j;
      y[i] = (words[j] >> 8) >= threshold ? x[i] * scale : 0.0f;
    }
  }
}

}  // namespace linformer

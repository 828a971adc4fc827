#include "linformer/kernels/dropout.h"

#include "linformer/core/rng.h"

#include <algorithm>
#include <cstring>

namespace linformer {

void dropout_apply(const float* x, float* y, int64_t n, float p, uint64_t seed, uint64_t stream) {
  if (p <= 0.0f) {
    if (x != y) std::memcpy(y, x, sizeof(float) * static_cast<size_t>(n));
    return;
  }
  const float scale = 1.0f / (1.0f - p);
  // Element i keeps its value when its 16-bit uniform (half of a Philox word) is ≥ p·2^16:
  // one Philox block of four words serves eight elements.
  const uint32_t threshold = static_cast<uint32_t>(static_cast<double>(p) * 65536.0);
  const PhiloxKey key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  const int64_t blocks = (n + 7) / 8;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const PhiloxCounter words = philox4x32_10(
        {static_cast<uint32_t>(b), static_cast<uint32_t>(static_cast<uint64_t>(b) >> 32),
         static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
        key);
    const int64_t begin = 8 * b, count = std::min<int64_t>(8, n - begin);
    for (int64_t j = 0; j < count; ++j) {
      const uint32_t u = (words[j / 2] >> (16 * (j % 2))) & 0xFFFFu;
      y[begin + j] = u >= threshold ? x[begin + j] * scale : 0.0f;
    }
  }
}

}  // namespace linformer

#include "linformer/kernels/dropout.h"

#include "linformer/core/rng.h"
#include "linformer/kernels/kernel_timing.h"

#include <algorithm>
#include <cstring>

namespace linformer {

void dropout_apply(const float* x, float* y, int64_t n, float p, uint64_t seed, uint64_t stream) {
  const KernelTimer timer(KernelKind::dropout);
  if (p <= 0.0f) {
    if (x != y) std::memcpy(y, x, sizeof(float) * static_cast<size_t>(n));
    return;
  }
  const float scale = 1.0f / (1.0f - p);
  // Element i keeps its value when its 16-bit uniform (half of a Philox word) is ≥ p·2^16:
  // one Philox block of four words serves eight elements.
  const uint32_t threshold = static_cast<uint32_t>(static_cast<double>(p) * 65536.0);
  const PhiloxKey key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  // A batch of kPhiloxBatch blocks covers 8·kPhiloxBatch elements; element e of the site uses
  // block e / 8, word (e % 8) / 2, half e % 2.
  constexpr int64_t kPerBatch = 8 * kPhiloxBatch;
  const int64_t batches = (n + kPerBatch - 1) / kPerBatch;
#pragma omp parallel for schedule(static)
  for (int64_t batch = 0; batch < batches; ++batch) {
    uint32_t words[4][kPhiloxBatch];
    philox4x32_10_batch(static_cast<uint64_t>(batch) * kPhiloxBatch, stream, key, words);
    uint32_t uniform[kPerBatch];  // element j's 16-bit uniform
    for (int w = 0; w < 4; ++w)
      for (int block = 0; block < kPhiloxBatch; ++block) {
        uniform[8 * block + 2 * w] = words[w][block] & 0xFFFFu;
        uniform[8 * block + 2 * w + 1] = words[w][block] >> 16;
      }
    const int64_t begin = batch * kPerBatch, count = std::min<int64_t>(kPerBatch, n - begin);
#pragma omp simd
    for (int64_t j = 0; j < count; ++j) y[begin + j] = uniform[j] >= threshold ? x[begin + j] * scale : 0.0f;
  }
}

}  // namespace linformer

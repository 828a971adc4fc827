#include "linformer/kernels/dropout.h"

#include "linformer/core/rng.h"
#include "linformer/kernels/kernel_timing.h"

#include <algorithm>
#include <cstring>

namespace linformer {

namespace {

// The 16-bit uniforms of a site's elements [8·kPhiloxBatch·batch, 8·kPhiloxBatch·(batch + 1)):
// element j's is Philox block j / 8, word (j % 8) / 2, half j % 2.
void batch_uniforms(int64_t batch, uint64_t stream, const PhiloxKey& key, uint32_t (&uniform)[8 * kPhiloxBatch]) {
  uint32_t words[4][kPhiloxBatch];
  philox4x32_10_batch(static_cast<uint64_t>(batch) * kPhiloxBatch, stream, key, words);
  for (int w = 0; w < 4; ++w)
    for (int block = 0; block < kPhiloxBatch; ++block) {
      uniform[8 * block + 2 * w] = words[w][block] & 0xFFFFu;
      uniform[8 * block + 2 * w + 1] = words[w][block] >> 16;
    }
}

// Calls write(i, kept, scale) for every element i of a site with p > 0. Element i keeps its
// value when its 16-bit uniform (half of a Philox word) is ≥ p·2^16: one Philox block of four
// words serves eight elements, a batch of kPhiloxBatch blocks 8·kPhiloxBatch elements.
template <class Write>
void for_each_mask_element(int64_t n, float p, uint64_t seed, uint64_t stream, Write write) {
  const float scale = 1.0f / (1.0f - p);
  const uint32_t threshold = static_cast<uint32_t>(static_cast<double>(p) * 65536.0);
  const PhiloxKey key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  constexpr int64_t kPerBatch = 8 * kPhiloxBatch;
  const int64_t batches = (n + kPerBatch - 1) / kPerBatch;
#pragma omp parallel for schedule(static)
  for (int64_t batch = 0; batch < batches; ++batch) {
    uint32_t uniform[kPerBatch];
    batch_uniforms(batch, stream, key, uniform);
    const int64_t begin = batch * kPerBatch, count = std::min<int64_t>(kPerBatch, n - begin);
#pragma omp simd
    for (int64_t j = 0; j < count; ++j) write(begin + j, uniform[j] >= threshold, scale);
  }
}

// The same for rows of `width` elements, row r standing for the site's row index[r]: its elements
// are the site's index[r]·width + c, with those elements' uniforms. Calls write(r·width + c, …).
template <class Write>
void for_each_row_mask_element(int64_t rows, int64_t width, const int32_t* index, float p, uint64_t seed,
                               uint64_t stream, Write write) {
  const float scale = 1.0f / (1.0f - p);
  const uint32_t threshold = static_cast<uint32_t>(static_cast<double>(p) * 65536.0);
  const PhiloxKey key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  constexpr int64_t kPerBatch = 8 * kPhiloxBatch;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t first = static_cast<int64_t>(index[r]) * width, end = first + width;
    for (int64_t batch = first / kPerBatch; batch * kPerBatch < end; ++batch) {
      uint32_t uniform[kPerBatch];
      batch_uniforms(batch, stream, key, uniform);
      const int64_t begin = std::max(first, batch * kPerBatch), stop = std::min(end, (batch + 1) * kPerBatch);
      for (int64_t i = begin; i < stop; ++i)
        write(r * width + (i - first), uniform[i - batch * kPerBatch] >= threshold, scale);
    }
  }
}

}  // namespace

void dropout_apply_rows(const float* x, float* y, int64_t rows, int64_t width, const int32_t* row_index, float p,
                        uint64_t seed, uint64_t stream) {
  if (row_index == nullptr || p <= 0.0f) {
    dropout_apply(x, y, rows * width, p, seed, stream);
    return;
  }
  const KernelTimer timer(KernelKind::dropout);
  for_each_row_mask_element(rows, width, row_index, p, seed, stream, [=](int64_t i, bool kept, float scale) {
    const float scaled = x[i] * scale;
    y[i] = kept ? scaled : 0.0f;
  });
}

void dropout_add_rows(const float* x, const float* branch, float* y, int64_t rows, int64_t width,
                      const int32_t* row_index, float p, uint64_t seed, uint64_t stream) {
  if (row_index == nullptr || p <= 0.0f) {
    dropout_add(x, branch, y, rows * width, p, seed, stream);
    return;
  }
  const KernelTimer timer(KernelKind::dropout);
  for_each_row_mask_element(rows, width, row_index, p, seed, stream, [=](int64_t i, bool kept, float scale) {
    const float scaled = branch[i] * scale, base = x[i];
    y[i] = base + (kept ? scaled : 0.0f);
  });
}

void dropout_apply(const float* x, float* y, int64_t n, float p, uint64_t seed, uint64_t stream) {
  const KernelTimer timer(KernelKind::dropout);
  if (p <= 0.0f) {
    if (x != y) std::memcpy(y, x, sizeof(float) * static_cast<size_t>(n));
    return;
  }
  // Loads before the select keep the loop branch-free (vectorised).
  for_each_mask_element(n, p, seed, stream, [=](int64_t i, bool kept, float scale) {
    const float scaled = x[i] * scale;
    y[i] = kept ? scaled : 0.0f;
  });
}

void dropout_add(const float* x, const float* branch, float* y, int64_t n, float p, uint64_t seed, uint64_t stream) {
  const KernelTimer timer(KernelKind::dropout);
  if (p <= 0.0f) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] + branch[i];
    return;
  }
  for_each_mask_element(n, p, seed, stream, [=](int64_t i, bool kept, float scale) {
    const float scaled = branch[i] * scale, base = x[i];
    y[i] = base + (kept ? scaled : 0.0f);
  });
}

}  // namespace linformer

#include "linformer/kernels/bf16.h"

#include "linformer/kernels/kernel_timing.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>

namespace linformer {

void convert_to_bf16(const float* in, bf16* out, size_t n) {
  const KernelTimer timer(KernelKind::bf16_conversion);
  const auto count = static_cast<int64_t>(n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) out[i] = to_bf16(in[i]);
}

void round_to_bf16_values(float* x, size_t n) {
  const KernelTimer timer(KernelKind::bf16_conversion);
  const auto count = static_cast<int64_t>(n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) x[i] = to_float(to_bf16(x[i]));
}

void convert_to_float(const bf16* in, float* out, size_t n) {
  const auto count = static_cast<int64_t>(n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) out[i] = to_float(in[i]);
}

TensorView<const bf16> convert_to_bf16(TensorView<const float> in, bf16* out) {
  const int rank = in.rank();
  LF_CHECK(rank >= 1, "a bf16 copy of a rank-0 view");
  const KernelTimer timer(KernelKind::bf16_conversion);
  // Axes from the largest input stride to the smallest (ties keep their order): the output is
  // dense in that order, so its innermost axis is the input's innermost one.
  std::array<int, kMaxRank> order{};
  std::iota(order.begin(), order.begin() + rank, 0);
  std::stable_sort(order.begin(), order.begin() + rank, [&](int x, int y) { return in.stride(x) > in.stride(y); });
  std::array<int64_t, kMaxRank> out_strides{};
  int64_t step = 1;
  for (int i = rank - 1; i >= 0; --i) {
    out_strides[order[i]] = step;
    step *= in.size(order[i]);
  }
  const int inner_axis = order[rank - 1];
  const int64_t inner = in.size(inner_axis), in_step = in.stride(inner_axis);
  const int64_t rows = inner == 0 ? 0 : in.numel() / inner;
  const float* const src = in.data();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    // Row r's input offset: r's digits over the outer axes, innermost of them fastest.
    int64_t rest = r, offset = 0;
    for (int i = rank - 2; i >= 0; --i) {
      const int64_t size = in.size(order[i]);
      offset += (rest % size) * in.stride(order[i]);
      rest /= size;
    }
    const float* const row_in = src + offset;
    bf16* const row_out = out + r * inner;
    if (in_step == 1) {
#pragma omp simd
      for (int64_t j = 0; j < inner; ++j) row_out[j] = to_bf16(row_in[j]);
    } else {
      for (int64_t j = 0; j < inner; ++j) row_out[j] = to_bf16(row_in[j * in_step]);
    }
  }
  return TensorView<const bf16>(out, in.shape(), Shape(out_strides.data(), rank));
}

}  // namespace linformer

#include "linformer/kernels/softmax.h"

#include "linformer/kernels/fast_math.h"
#include "linformer/kernels/kernel_timing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace linformer {

namespace {

// The forward for every entry point: scores s of type In (f32, or bf16 in inference); p (f32)
// and p_bf16 may be null, not both. Without p, a row's exponentials wait in a per-thread row, so
// p_bf16 may alias a bf16 s (each row is read whole before it is written). With round_p, p holds
// P's bf16 rounding (as f32 values) like p_bf16.
template <class In>
void softmax_rows(const In* s, float* p, bf16* p_bf16, int64_t rows, int64_t cols, float scale,
                  const uint8_t* key_valid, int64_t rows_per_mask, bool round_p = false) {
  // The loops over a row are explicit simd loops: the reductions may be reordered, and the
  // key mask is a select, not a branch.
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  const auto load = [](In v) {
    if constexpr (std::is_same_v<In, bf16>)
      return to_float(v);
    else
      return v;
  };
#pragma omp parallel
  {
    std::vector<float> row(p ? 0 : static_cast<size_t>(cols));  // (cols) the exponentials, without p
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const In* sr = s + r * cols;
      float* pr = p ? p + r * cols : row.data();
      const uint8_t* valid = key_valid ? key_valid + (r / rows_per_mask) * cols : nullptr;
      float max = kMinusInf;
      if (valid) {
#pragma omp simd reduction(max : max)
        for (int64_t j = 0; j < cols; ++j) max = std::max(max, valid[j] ? scale * load(sr[j]) : kMinusInf);
      } else {
#pragma omp simd reduction(max : max)
        for (int64_t j = 0; j < cols; ++j) max = std::max(max, scale * load(sr[j]));
      }
      double sum = 0;
      if (valid) {
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < cols; ++j) {
          const float e = valid[j] ? fast_exp(scale * load(sr[j]) - max) : 0.0f;
          pr[j] = e;
          sum += e;
        }
      } else {
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < cols; ++j) {
          const float e = fast_exp(scale * load(sr[j]) - max);
          pr[j] = e;
          sum += e;
        }
      }
      const float inv = sum > 0 ? static_cast<float>(1.0 / sum) : 0.0f;
      bf16* br = p_bf16 ? p_bf16 + r * cols : nullptr;
      if (!p) {  // only the rounding is kept
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) br[j] = to_bf16(pr[j] * inv);
      } else {
        if (round_p) {
#pragma omp simd
          for (int64_t j = 0; j < cols; ++j) pr[j] = to_float(to_bf16(pr[j] * inv));
        } else {
#pragma omp simd
          for (int64_t j = 0; j < cols; ++j) pr[j] *= inv;
        }
        if (br) {
#pragma omp simd
          for (int64_t j = 0; j < cols; ++j) br[j] = to_bf16(pr[j]);
        }
      }
    }
  }
}

// The backward for every entry point: dp and p f32 or bf16, ds written as Out (f32 or bf16).
template <typename In, typename P, typename Out>
void softmax_backward_rows(const In* dp, const P* p, Out* ds, int64_t rows, int64_t cols, float scale) {
  const auto load = [](auto v) {
    if constexpr (std::is_same_v<decltype(v), bf16>)
      return to_float(v);
    else
      return v;
  };
  // In the forward pass: p = softmax(scale * s). So ds_j = scale * p_j (dp_j - Σ_i dp_i p_i).
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const In* dpr = dp + r * cols;  // may be ds's row (in place): each element is read before written
    const P* pr = p + r * cols;
    double dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j < cols; ++j) dot += static_cast<double>(load(dpr[j])) * load(pr[j]);
    Out* dsr = ds + r * cols;
    const float d = static_cast<float>(dot);
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) {
      const float v = scale * load(pr[j]) * (load(dpr[j]) - d);
      if constexpr (std::is_same_v<Out, bf16>)
        dsr[j] = to_bf16(v);
      else
        dsr[j] = v;
    }
  }
}

}  // namespace

void softmax_forward(const float* s, float* p, int64_t rows, int64_t cols, float scale, const uint8_t* key_valid,
                     int64_t rows_per_mask) {
  const KernelTimer timer(KernelKind::softmax);
  softmax_rows(s, p, nullptr, rows, cols, scale, key_valid, rows_per_mask);
}

void softmax_forward_bf16_in_place(bf16* s, int64_t rows, int64_t cols, float scale, const uint8_t* key_valid,
                                   int64_t rows_per_mask) {
  const KernelTimer timer(KernelKind::softmax);
  softmax_rows<bf16>(s, nullptr, s, rows, cols, scale, key_valid, rows_per_mask);
}

void softmax_forward_bf16_scores(const bf16* s, float* p, bf16* p_bf16, int64_t rows, int64_t cols, float scale,
                                 const uint8_t* key_valid, int64_t rows_per_mask) {
  const KernelTimer timer(KernelKind::softmax);
  softmax_rows(s, p, p_bf16, rows, cols, scale, key_valid, rows_per_mask, /*round_p=*/true);
}

void softmax_backward_bf16_gradient(const bf16* dp, const bf16* p, bf16* ds, int64_t rows, int64_t cols, float scale) {
  const KernelTimer timer(KernelKind::softmax);
  softmax_backward_rows(dp, p, ds, rows, cols, scale);
}

void softmax_backward(const float* dp, const float* p, float* ds, int64_t rows, int64_t cols, float scale) {
  const KernelTimer timer(KernelKind::softmax);
  softmax_backward_rows(dp, p, ds, rows, cols, scale);
}

void softmax_backward_bf16(const float* dp, const float* p, bf16* ds, int64_t rows, int64_t cols, float scale) {
  const KernelTimer timer(KernelKind::softmax);
  softmax_backward_rows(dp, p, ds, rows, cols, scale);
}

}  // namespace linformer

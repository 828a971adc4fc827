#pragma once
// Row softmax of scaled scores with an optional key mask, forward and backward.
// Rows are `cols` long and contiguous; `rows` of them.

#include <cstdint>

namespace linformer {

// p = softmax(scale * s) over each row, with key j excluded (p = 0) where
// key_valid[(row / rows_per_mask) * cols + j] == 0 when key_valid is given.
// p may alias s.
void softmax_forward(const float* s, float* p, int64_t rows, int64_t cols, float scale,
                     const uint8_t* key_valid = nullptr, int64_t rows_per_mask = 1);

// ds = scale * p ⊙ (dp - Σ_j dp p); overwrites ds (may alias dp).
void softmax_backward(const float* dp, const float* p, float* ds, int64_t rows, int64_t cols, float scale);

}  // namespace linformer

#pragma once
// Row softmax of scaled scores with an optional key mask, forward and backward.
// Rows are `cols` long and contiguous; `rows` of them.

#include "linformer/kernels/bf16.h"

#include <cstdint>

namespace linformer {

// p = softmax(scale * s) over each row, with key j excluded (p = 0) where
// key_valid[(row / rows_per_mask) * cols + j] == 0 when key_valid is given.
// p may alias s.
void softmax_forward(const float* s, float* p, int64_t rows, int64_t cols, float scale,
                     const uint8_t* key_valid = nullptr, int64_t rows_per_mask = 1);

// ds = scale * p ⊙ (dp - Σ_j dp p); overwrites ds (may alias dp).
void softmax_backward(const float* dp, const float* p, float* ds, int64_t rows, int64_t cols, float scale);

// The bf16 path, fused: the forward also writes p's rounding (the P·V matmul's operand) into
// p_bf16 in the same pass; the backward writes ds only rounded (both matmuls that read it take
// bf16 operands). Each equals to_bf16 of what the f32 kernel writes.
void softmax_forward_bf16(const float* s, float* p, bf16* p_bf16, int64_t rows, int64_t cols, float scale,
                          const uint8_t* key_valid = nullptr, int64_t rows_per_mask = 1);
// Inference's bf16 path: scores s kept in bf16 become their probabilities in place, computed in
// f32: equal to to_bf16 of softmax_forward of the scores' f32 values.
void softmax_forward_bf16_in_place(bf16* s, int64_t rows, int64_t cols, float scale,
                                   const uint8_t* key_valid = nullptr, int64_t rows_per_mask = 1);
void softmax_backward_bf16(const float* dp, const float* p, bf16* ds, int64_t rows, int64_t cols, float scale);

}  // namespace linformer

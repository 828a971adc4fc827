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

// Training's bf16 path, where Q·Kᵀ and dP = d_ctx·Vᵀ are written in bf16 (bf16-result matmuls):
// the forward reads bf16 scores and keeps P only as its bf16 rounding, which both P·V and the
// backward read: written as bf16 into p_bf16 (may alias s) and/or as f32 values into p (for
// attention dropout, which scales P in f32), either may be null. The backward reads a bf16 dp and
// that bf16 P, and writes ds rounded (may alias dp). Each equals the f32 kernel on the same values
// (the scores', dp's and P's rounding), rounded where bf16: the f32-operand path rounds P likewise.
void softmax_forward_bf16_scores(const bf16* s, float* p, bf16* p_bf16, int64_t rows, int64_t cols, float scale,
                                 const uint8_t* key_valid = nullptr, int64_t rows_per_mask = 1);
void softmax_backward_bf16_gradient(const bf16* dp, const bf16* p, bf16* ds, int64_t rows, int64_t cols, float scale);
// Inference's bf16 path: scores s kept in bf16 become their probabilities in place, computed in
// f32: equal to to_bf16 of softmax_forward of the scores' f32 values.
void softmax_forward_bf16_in_place(bf16* s, int64_t rows, int64_t cols, float scale, const uint8_t* key_valid = nullptr,
                                   int64_t rows_per_mask = 1);
// The backward from an f32 dp (with attention dropout, which scales dP after its matmul), ds
// written only rounded: to_bf16 of what softmax_backward writes.
void softmax_backward_bf16(const float* dp, const float* p, bf16* ds, int64_t rows, int64_t cols, float scale);

}  // namespace linformer

#pragma once
// C = A · B (+ bias), or C += A · B, on oneDNN's matmul, for strided fp32 views.
//
// Views have rank 2 (M×K · K×N) or carry up to two leading batch axes; a batch
// axis of extent 1 in A or B broadcasts. Transposes and head slices are strides,
// never copies. Each distinct shape/stride combination builds its oneDNN
// primitive once and reuses it (a process-wide cache).

#include "linformer/core/tensor.h"

namespace linformer {

enum class Accumulate { overwrite, add };

// c (=|+=) a · b, plus bias (length N, broadcast over rows) when given.
void matmul(TensorView<const float> a, TensorView<const float> b, TensorView<float> c,
            Accumulate mode = Accumulate::overwrite, const float* bias = nullptr);

// Number of distinct primitives built so far (tests check that reuse works).
size_t matmul_primitives_built();

}  // namespace linformer

#pragma once
// Inverted dropout with masks drawn from Philox: element i of a site keeps its
// value (scaled by 1/(1-p)) when its counter-based 16-bit uniform is ≥ p (p is
// resolved to 1/65536). The mask is a
// pure function of (seed, stream, i), so backward regenerates it instead of
// storing it, and results do not depend on the thread count.

#include <cstdint>

namespace linformer {

// y = x * keep(i) / (1 - p); y may alias x. p = 0 copies.
// Backward is the same call on the gradient with the same (seed, stream).
void dropout_apply(const float* x, float* y, int64_t n, float p, uint64_t seed, uint64_t stream);

// y = x + dropout_apply(branch) in one pass (a residual connection); y may alias x or branch.
// Its backward is dropout_apply on the gradient with the same (seed, stream).
void dropout_add(const float* x, const float* branch, float* y, int64_t n, float p, uint64_t seed, uint64_t stream);

// The same on some rows of a site's (rows, width) elements: x, branch and y are (rows, width), row r
// standing for the site's row row_index[r], whose mask it takes (a layer computing only some rows,
// QueryRows, draws the masks computing every row would). row_index null: rows in order, as above.
void dropout_apply_rows(const float* x, float* y, int64_t rows, int64_t width, const int32_t* row_index, float p,
                        uint64_t seed, uint64_t stream);
void dropout_add_rows(const float* x, const float* branch, float* y, int64_t rows, int64_t width,
                      const int32_t* row_index, float p, uint64_t seed, uint64_t stream);

}  // namespace linformer

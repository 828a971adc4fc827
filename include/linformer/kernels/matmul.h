#pragma once
// C = A · B (+ bias), or C += A · B, on oneDNN's matmul, for strided fp32 views, or bf16 operand
// views with an fp32 result.
//
// Views have rank 2 (M×K · K×N) or carry up to two leading batch axes; a batch
// axis of extent 1 in A or B broadcasts. Transposes and head slices are strides,
// never copies (one exception: where the AVX2 sgemm is slow at Aᵀ·B for a tall, narrow C,
// matmul computes Cᵀ into a scratch and writes it transposed). Each distinct shape/stride
// combination builds its oneDNN primitive once and reuses it (a process-wide cache).

#include "linformer/core/tensor.h"
#include "linformer/kernels/bf16.h"

#include <map>
#include <string>

namespace linformer {

enum class Accumulate { overwrite, add };

// c (=|+=) a · b, plus bias (length N, broadcast over rows) when given.
void matmul(TensorView<const float> a, TensorView<const float> b, TensorView<float> c,
            Accumulate mode = Accumulate::overwrite, const float* bias = nullptr);
// The same with bf16 operands, accumulated and written in f32 (oneDNN's bf16:bf16:f32 matmul; the
// bias stays f32). Needs a CPU with avx512_bf16 (cpu_has_bf16()); elsewhere it fails.
void matmul(TensorView<const bf16> a, TensorView<const bf16> b, TensorView<float> c,
            Accumulate mode = Accumulate::overwrite, const float* bias = nullptr);
// And with a bf16 result: f32 accumulation (plus the f32 bias), each element rounded once as it is
// written, for results that only feed bf16 products (inference's attention scores, training's Q).
void matmul(TensorView<const bf16> a, TensorView<const bf16> b, TensorView<bf16> c, const float* bias = nullptr);

// With bf16 operands on (train.precision = "bf16"), the f32 matmul above rounds both operands to
// bf16 (convert_to_bf16, into a per-thread scratch) and runs the bf16 matmul: f32 accumulation,
// f32 result. Process-wide, like the primitive cache; needs avx512_bf16 (else it fails).
void set_matmul_bf16_operands(bool on);
bool matmul_bf16_operands();
// One operand already bf16 (a weight's bf16 copy), the other f32 and rounded as above.
void matmul(TensorView<const float> a, TensorView<const bf16> b, TensorView<float> c,
            Accumulate mode = Accumulate::overwrite, const float* bias = nullptr);
void matmul(TensorView<const bf16> a, TensorView<const float> b, TensorView<float> c,
            Accumulate mode = Accumulate::overwrite, const float* bias = nullptr);

// A tall rank-2 product (m ≥ 2k) on an AVX-512 CPU first reorders its B into the kernel's
// blocked layout, the same arithmetic faster (matmul.cpp says how much); process-wide, on by
// default. Off only to compare (tests, benchmarks). Such primitives show in matmul_implementations()
// as "<kernel> (packed weights)".
void set_matmul_packed_weights(bool on);

// True where oneDNN runs f32 matmuls on its AVX2 sgemm (CPUs without AVX-512). Its speed
// depends on operand placement (see the skew below) and orientation (see above).
bool matmul_runs_avx2_sgemm();

// Bytes past a cache line at which buffers that feed matmuls should start. The AVX2 sgemm
// computes Aᵀ·B (every weight gradient) at half speed when B starts on a 32-byte boundary
// (results/2026-11-22_matmul_quirks/); 16 bytes past one it runs at full speed. 0 elsewhere.
size_t matmul_operand_skew_bytes();

// Number of distinct primitives built so far (tests check that reuse works).
size_t matmul_primitives_built();

// oneDNN's implementation name of every primitive built so far (e.g. "gemm:jit",
// "brg:avx512_core_bf16") and how many primitives use it: shows whether bf16 kernels run.
std::map<std::string, size_t> matmul_implementations();

}  // namespace linformer

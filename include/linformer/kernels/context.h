#pragma once
// The oneDNN CPU engine and stream, created once per process.
// kernels/ is the only part of the project that includes dnnl.hpp.

#include <oneapi/dnnl/dnnl.hpp>

#include <string>

namespace linformer {

class DnnlContext {
 public:
  // The process-wide context (engine 0 of kind cpu, one in-order stream).
  static DnnlContext& get();

  const dnnl::engine& engine() const { return engine_; }
  dnnl::stream& stream() { return stream_; }

 private:
  DnnlContext();
  dnnl::engine engine_;
  dnnl::stream stream_;
};

// The matmul precision of a run. bf16: every matmul takes bf16 operands and accumulates in f32
// (matmul.h, set_matmul_bf16_operands); weights, gradients, optimizer state, LayerNorm, softmax
// and the loss stay fp32. Needs avx512_bf16; without it the run stays fp32.
struct MatmulPrecision {
  bool bf16 = false;  // in effect
  std::string note;   // what was chosen and why (a warning when bf16 was asked for and not possible)
};
// Sets the process-wide precision of the matmuls run from now on.
MatmulPrecision select_matmul_precision(bool want_bf16);
bool cpu_has_bf16();

// Sets FTZ and DAZ (flush denormal results and inputs to zero) in the calling thread and every
// OpenMP thread; threads created later inherit them. Call once at process start. Without it,
// denormal floats (softmax probabilities of far-off keys, gradients through them) cost
// microcode assists on Intel cores: a pre-LN run slowed from 9,000 to 2,000 tokens/s.
void flush_denormals_to_zero();

// "2.6.3 (commit …)"
std::string dnnl_version_string();
// The instruction set oneDNN dispatches to on this CPU, e.g. "avx512_core_bf16".
std::string dnnl_cpu_isa_name();

}  // namespace linformer

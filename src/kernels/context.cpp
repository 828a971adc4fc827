#include "linformer/kernels/context.h"

#include "linformer/kernels/matmul.h"

#include <xmmintrin.h>

#include <fmt/format.h>

namespace linformer {

DnnlContext& DnnlContext::get() {
  static DnnlContext context;
  return context;
}

DnnlContext::DnnlContext() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

void flush_denormals_to_zero() {
  constexpr unsigned kFlushToZero = 1u << 15, kDenormalsAreZero = 1u << 6;
  auto set = [] { _mm_setcsr(_mm_getcsr() | kFlushToZero | kDenormalsAreZero); };
  set();
#pragma omp parallel
  set();
}

bool cpu_has_bf16() {
  const auto isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

MatmulPrecision select_matmul_precision(bool want_bf16) {
  // oneDNN 2.6's bf16 fpmath mode leaves f32 matmuls on f32 kernels on Zen 4, so the operands are
  // converted explicitly (set_matmul_bf16_operands) and the mode stays strict.
  dnnl::set_default_fpmath_mode(dnnl::fpmath_mode::strict);
  const bool bf16 = want_bf16 && cpu_has_bf16();
  set_matmul_bf16_operands(bf16);
  if (bf16)
    return {true,
            "bf16 matmuls (bf16 operands, f32 accumulation; attention scores and their gradient rounded to bf16 as "
            "matmul results), fp32 weights, optimizer, LayerNorm, softmax arithmetic and loss"};
  if (!want_bf16) return {false, "fp32"};
  return {false, fmt::format("train.precision = \"bf16\" needs a CPU with avx512_bf16 (oneDNN's ISA here: {}); "
                             "running in fp32",
                             dnnl_cpu_isa_name())};
}

std::string dnnl_version_string() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("{}.{}.{} (commit {})", v->major, v->minor, v->patch, v->hash);
}

std::string dnnl_cpu_isa_name() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41:
      return "sse41";
    case isa::avx:
      return "avx";
    case isa::avx2:
      return "avx2";
    case isa::avx2_vnni:
      return "avx2_vnni";
    case isa::avx512_mic:
      return "avx512_mic";
    case isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case isa::avx512_core:
      return "avx512_core";
    case isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case isa::avx512_core_amx:
      return "avx512_core_amx";
    case isa::all:
      return "all";
  }
  return "unknown";
}

}  // namespace linformer

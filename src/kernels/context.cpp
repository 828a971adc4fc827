#include "linformer/kernels/context.h"

#include <fmt/format.h>

namespace linformer {

DnnlContext& DnnlContext::get() {
  static DnnlContext context;
  return context;
}

DnnlContext::DnnlContext() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

std::string dnnl_version_string() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("{}.{}.{} (commit {})", v->major, v->minor, v->patch, v->hash);
}

std::string dnnl_cpu_isa_name() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41: return "sse41";
    case isa::avx: return "avx";
    case isa::avx2: return "avx2";
    case isa::avx2_vnni: return "avx2_vnni";
    case isa::avx512_mic: return "avx512_mic";
    case isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case isa::avx512_core: return "avx512_core";
    case isa::avx512_core_vnni: return "avx512_core_vnni";
    case isa::avx512_core_bf16: return "avx512_core_bf16";
    case isa::avx512_core_amx: return "avx512_core_amx";
    case isa::all: return "all";
  }
  return "unknown";
}

}  // namespace linformer

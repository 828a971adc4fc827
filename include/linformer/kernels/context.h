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

// "2.6.3 (commit …)"
std::string dnnl_version_string();
// The instruction set oneDNN dispatches to on this CPU, e.g. "avx512_core_bf16".
std::string dnnl_cpu_isa_name();

}  // namespace linformer

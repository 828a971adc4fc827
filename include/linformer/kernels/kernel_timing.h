#pragma once
// Where a training step's time goes, by kernel family. While enabled (bench train turns it on),
// every kernel entry point adds its wall time, and matmul its FLOPs, to a process-wide table;
// while disabled a kernel pays one relaxed atomic load. Kernels called from inside another
// timed kernel count towards the outer one only.

#include <array>
#include <cstdint>

namespace linformer {

enum class KernelKind { matmul, bf16_conversion, layer_norm, softmax, gelu, dropout, cross_entropy, reduce, count };
inline constexpr int kKernelKinds = static_cast<int>(KernelKind::count);
const char* kernel_name(KernelKind kind);

struct KernelTotals {
  double seconds = 0;
  int64_t calls = 0;
  double flops = 0;  // matmul only
};

void enable_kernel_timing(bool on);
void reset_kernel_timing();
std::array<KernelTotals, kKernelKinds> kernel_timing();

// Times the enclosing kernel call when timing is enabled.
class KernelTimer {
 public:
  explicit KernelTimer(KernelKind kind, double flops = 0);
  ~KernelTimer();
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

 private:
  KernelKind kind_;
  double flops_;
  bool open_ = false;      // timing was on when the call began
  int64_t start_ns_ = -1;  // -1: not timed (off, or inside another timed kernel)
};

}  // namespace linformer

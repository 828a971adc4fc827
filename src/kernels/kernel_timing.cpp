#include "linformer/kernels/kernel_timing.h"

#include <atomic>
#include <chrono>
#include <mutex>

namespace linformer {

namespace {

struct Table {
  std::atomic<bool> enabled{false};
  std::mutex mutex;
  std::array<KernelTotals, kKernelKinds> totals{};
};
Table& table() {
  static Table t;
  return t;
}
thread_local int timed_depth = 0;  // timed kernel calls open on this thread

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

const char* kernel_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::matmul:
      return "matmul (oneDNN)";
    case KernelKind::bf16_conversion:
      return "bf16 operand copies";
    case KernelKind::layer_norm:
      return "layer norm";
    case KernelKind::softmax:
      return "softmax";
    case KernelKind::gelu:
      return "GELU";
    case KernelKind::dropout:
      return "dropout";
    case KernelKind::cross_entropy:
      return "cross-entropy";
    case KernelKind::reduce:
      return "sums, gathers, scatters";
    case KernelKind::count:
      break;
  }
  return "?";
}

void enable_kernel_timing(bool on) { table().enabled.store(on, std::memory_order_relaxed); }

void reset_kernel_timing() {
  auto& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.totals = {};
}

std::array<KernelTotals, kKernelKinds> kernel_timing() {
  auto& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  return t.totals;
}

KernelTimer::KernelTimer(KernelKind kind, double flops) : kind_(kind), flops_(flops) {
  if (!table().enabled.load(std::memory_order_relaxed)) return;
  open_ = true;
  if (timed_depth++ == 0) start_ns_ = now_ns();
}

KernelTimer::~KernelTimer() {
  if (!open_) return;
  --timed_depth;
  if (start_ns_ < 0) return;  // inside another timed kernel
  const double seconds = 1e-9 * static_cast<double>(now_ns() - start_ns_);
  auto& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto& totals = t.totals[static_cast<int>(kind_)];
  totals.seconds += seconds;
  totals.calls += 1;
  totals.flops += flops_;
}

}  // namespace linformer

#pragma once
// Wall-clock intervals for logs and reports.

#include <chrono>

namespace linformer {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace linformer

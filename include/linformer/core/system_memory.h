#pragma once
// How much memory this process may still take: the smaller of the kernel's MemAvailable and
// the room left under the cgroup's limit (a container's memory.max), so that a run that cannot
// fit is refused before it allocates rather than killed halfway.

#include <cstdint>
#include <string>

namespace linformer {

struct AvailableMemory {
  uint64_t bytes = 0;
  std::string source;  // "MemAvailable in /proc/meminfo" or "the cgroup limit (…/memory.max)"
  bool known() const { return !source.empty(); }
};

AvailableMemory available_memory();

// "1.5 GiB", "320.0 MiB": bytes for a person.
std::string format_bytes(double bytes);

}  // namespace linformer

#pragma once
// How much memory this process may still take: the smallest of the kernel's MemAvailable, the
// room left under the cgroup's limit (a container's memory.max) and the room left under the
// address-space limit (RLIMIT_AS: ulimit -v, prlimit --as), so that a run that cannot fit is
// refused before it allocates rather than killed or failing halfway. `source` names the limit
// that binds.

#include <cstdint>
#include <string>

namespace linformer {

struct AvailableMemory {
  uint64_t bytes = 0;
  std::string source;  // "MemAvailable in /proc/meminfo", "the room under the cgroup limit (…/memory.max)"
                       // or "the room under the address-space limit (RLIMIT_AS, …)"
  bool known() const { return !source.empty(); }
};

AvailableMemory available_memory();

// "1.5 GiB", "320.0 MiB": bytes for a person.
std::string format_bytes(double bytes);

}  // namespace linformer

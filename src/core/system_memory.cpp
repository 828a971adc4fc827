#include "linformer/core/system_memory.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <fstream>
#include <sstream>

namespace linformer {

namespace {

// The first number of a file ("max" and unreadable files: none).
bool read_number(const std::string& path, uint64_t& value) {
  std::ifstream in(path);
  return static_cast<bool>(in >> value);
}

bool mem_available(uint64_t& bytes) {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    uint64_t kib = 0;
    if (!(fields >> kib)) return false;
    bytes = kib * 1024;
    return true;
  }
  return false;
}

// This process's cgroup v2 directory, from /proc/self/cgroup ("0::/path").
std::string cgroup_dir() {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  return {};
}

// The room under the address-space limit (ulimit -v, prlimit --as): the limit less this
// process's virtual size now (VmSize in /proc/self/status). No limit: none.
bool address_space_room(uint64_t& bytes, uint64_t& limit) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return false;
  uint64_t vm_kib = 0;
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmSize:", 0) == 0) std::istringstream(line.substr(7)) >> vm_kib;
  limit = rl.rlim_cur;
  bytes = limit > vm_kib * 1024 ? limit - vm_kib * 1024 : 0;
  return true;
}

}  // namespace

AvailableMemory available_memory() {
  AvailableMemory m;
  if (uint64_t bytes = 0; mem_available(bytes)) m = {bytes, "MemAvailable in /proc/meminfo"};
  const std::string dir = cgroup_dir();
  uint64_t limit = 0, current = 0;
  if (!dir.empty() && read_number(dir + "/memory.max", limit) && read_number(dir + "/memory.current", current)) {
    const uint64_t room = limit > current ? limit - current : 0;
    if (!m.known() || room < m.bytes) m = {room, fmt::format("the room under the cgroup limit ({}/memory.max)", dir)};
  }
  if (uint64_t room = 0, limit = 0; address_space_room(room, limit) && (!m.known() || room < m.bytes))
    m = {room, fmt::format("the room under the address-space limit (RLIMIT_AS, ulimit -v: {})",
                           format_bytes(static_cast<double>(limit)))};
  return m;
}

std::string format_bytes(double bytes) {
  if (bytes >= 1024.0 * 1024 * 1024) return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024 * 1024));
  return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
}

}  // namespace linformer

#include "linformer/core/checksum.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>

namespace linformer {

uint32_t crc32_update(uint32_t crc, const void* p, uint64_t n) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  while (n > 0) {
    const uInt chunk = static_cast<uInt>(std::min<uint64_t>(n, 1u << 30));
    crc = static_cast<uint32_t>(crc32(crc, bytes, chunk));
    bytes += chunk;
    n -= chunk;
  }
  return crc;
}

std::string crc32_hex(std::string_view bytes) {
  return fmt::format("{:08x}", crc32_update(0, bytes.data(), bytes.size()));
}

}  // namespace linformer

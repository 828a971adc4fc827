#pragma once
// crc32 (zlib's), the checksum of shards and checkpoint files.

#include <cstdint>
#include <string>
#include <string_view>

namespace linformer {

// Continues crc over n bytes at p (any length: zlib takes 32-bit lengths, so it is fed in pieces).
uint32_t crc32_update(uint32_t crc, const void* p, uint64_t n);
// The crc32 of bytes as 8 hex digits.
std::string crc32_hex(std::string_view bytes);

}  // namespace linformer

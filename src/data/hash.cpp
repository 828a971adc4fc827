#include "linformer/data/hash.h"

#include "linformer/core/rng.h"

namespace linformer::data {

uint64_t hash64(std::string_view bytes, uint64_t seed) {
  uint64_t h = 0xCBF29CE484222325ull ^ mix64(seed);
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ull;
  }
  return mix64(h ^ bytes.size());
}

}  // namespace linformer::data

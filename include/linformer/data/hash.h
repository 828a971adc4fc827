#pragma once
// A 64-bit hash of bytes, for cache keys and vocabulary identities (not for security).

#include <cstdint>
#include <string_view>

namespace linformer::data {

// FNV-1a over the bytes, finished with a SplitMix64 mix; stable across runs and machines.
uint64_t hash64(std::string_view bytes, uint64_t seed = 0);

}  // namespace linformer::data

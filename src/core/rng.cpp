#include "linformer/core/rng.h"

#include "linformer/core/check.h"

#include <cmath>

namespace linformer {

namespace {
constexpr uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;    // Philox multipliers
constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;  // key schedule increments

inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}
}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kWeyl0;
      k[1] += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c[0], hi0, lo0);
    mulhilo(kMul1, c[2], hi1, lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  }
  return c;
}

void philox4x32_10_batch(uint64_t first_block, uint64_t lane, PhiloxKey key, uint32_t (&words)[4][kPhiloxBatch]) {
  uint64_t round_key0[10], round_key1[10];
  for (int round = 0; round < 10; ++round) {
    round_key0[round] = key[0] + static_cast<uint32_t>(round) * kWeyl0;
    round_key1[round] = key[1] + static_cast<uint32_t>(round) * kWeyl1;
  }
  // The scalar rounds, one block per SIMD lane. Each 32-bit word lives in the low half of a
  // 64-bit lane (the high half is don't-care), so a round is two 32×32→64 multiplies
  // (vpmuludq), two shifts and four xors, with no repacking between rounds.
  constexpr uint64_t kLow = 0xFFFFFFFFull;
#pragma omp simd
  for (int i = 0; i < kPhiloxBatch; ++i) {
    const uint64_t block = first_block + static_cast<uint64_t>(i);
    uint64_t c0 = block & kLow, c1 = block >> 32, c2 = lane & kLow, c3 = lane >> 32;
    for (int round = 0; round < 10; ++round) {
      const uint64_t p0 = (c0 & kLow) * kMul0, p1 = (c2 & kLow) * kMul1;
      c0 = (p1 >> 32) ^ c1 ^ round_key0[round];
      c2 = (p0 >> 32) ^ c3 ^ round_key1[round];
      c1 = p1;
      c3 = p0;
    }
    words[0][i] = static_cast<uint32_t>(c0);
    words[1][i] = static_cast<uint32_t>(c1);
    words[2][i] = static_cast<uint32_t>(c2);
    words[3][i] = static_cast<uint32_t>(c3);
  }
}

uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t hash_string(std::string_view text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

uint64_t stream_id(std::initializer_list<uint64_t> parts) {
  uint64_t h = 0x6A09E667F3BCC909ull;
  for (uint64_t p : parts) h = mix64(h ^ mix64(p));
  return h;
}

uint32_t Rng::next_u32() {
  // Counter: (block index within the stream, stream id); key: the seed.
  const uint64_t block = state_.offset / 4;
  const PhiloxCounter counter = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                                 static_cast<uint32_t>(state_.stream), static_cast<uint32_t>(state_.stream >> 32)};
  const PhiloxKey key = {static_cast<uint32_t>(state_.seed), static_cast<uint32_t>(state_.seed >> 32)};
  // Recomputing the block per word keeps the state three plain integers; callers that
  // need bulk throughput (dropout masks) use philox4x32_10 directly on whole blocks.
  const uint32_t word = philox4x32_10(counter, key)[state_.offset % 4];
  ++state_.offset;
  return word;
}

uint64_t Rng::next_u64() {
  const uint64_t lo = next_u32();
  return (static_cast<uint64_t>(next_u32()) << 32) | lo;
}

float Rng::uniform() { return static_cast<float>(next_u32() >> 8) * 0x1.0p-24f; }

double Rng::uniform_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

uint64_t Rng::below(uint64_t n) {
  LF_CHECK(n > 0, "Rng::below(0)");
  // Rejection sampling: accept x < the largest multiple of n that fits in 64 bits.
  const uint64_t limit = UINT64_MAX - (UINT64_MAX % n);
  uint64_t x;
  do {
    x = next_u64();
  } while (x >= limit);
  return x % n;
}

float Rng::normal() {
  // u1 in (0, 1] so that log(u1) is finite.
  const double u1 = (static_cast<double>(next_u32()) + 1.0) * 0x1.0p-32;
  const double u2 = static_cast<double>(next_u32()) * 0x1.0p-32;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}

}  // namespace linformer

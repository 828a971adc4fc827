#pragma once
// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11).
//
// A Philox output depends only on (key, counter), so any draw can be computed
// without replaying the ones before it. Rng turns that into a stream whose whole
// state is {seed, stream, offset}: save those three numbers and the stream
// continues exactly where it stopped, on any machine and thread count.
// Independent streams (per epoch, per sample, per layer) come from stream_id().

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace linformer {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// One Philox4x32 block with 10 rounds: four independent 32-bit outputs.
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

// kPhiloxBatch consecutive blocks at once, counters {block, block >> 32, lane, lane >> 32} for
// block = first_block + i; words[w][i] is word w of block i. Same values as philox4x32_10, laid
// out so the rounds vectorise (bulk draws such as dropout masks).
inline constexpr int kPhiloxBatch = 16;
void philox4x32_10_batch(uint64_t first_block, uint64_t lane, PhiloxKey key, uint32_t (&words)[4][kPhiloxBatch]);

// SplitMix64 finaliser: a good 64-bit mixing function for deriving seeds.
uint64_t mix64(uint64_t x);

// A stable 64-bit hash of a string (FNV-1a), e.g. to key a stream by a tensor name.
uint64_t hash_string(std::string_view text);

// A stream id from a list of integers, e.g. stream_id({kMaskStream, epoch, index}).
uint64_t stream_id(std::initializer_list<uint64_t> parts);

struct RngState {
  uint64_t seed = 0;
  uint64_t stream = 0;
  uint64_t offset = 0;  // 32-bit words drawn so far
  bool operator==(const RngState& o) const { return seed == o.seed && stream == o.stream && offset == o.offset; }
};

class Rng {
 public:
  explicit Rng(uint64_t seed = 0, uint64_t stream = 0) : state_{seed, stream, 0} {}
  explicit Rng(const RngState& state) : state_(state) {}

  const RngState& state() const { return state_; }
  void set_state(const RngState& state) { state_ = state; }

  uint32_t next_u32();
  uint64_t next_u64();
  // Uniform in [0, 1): 24 random bits for float, 53 for double.
  float uniform();
  double uniform_double();
  // Uniform integer in [0, n), without modulo bias. n > 0.
  uint64_t below(uint64_t n);
  // Standard normal (Box-Muller; consumes two 32-bit words, keeps no spare).
  float normal();

 private:
  RngState state_;
};

}  // namespace linformer

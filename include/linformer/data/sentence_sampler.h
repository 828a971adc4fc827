#pragma once
// The tokenizer's sample: a uniform random sample of a stream of sentences, bounded both in
// sentences and in bytes of text, deterministic in the seed. Memory: the sample only.
//
// Each sentence i gets a random key that depends only on (seed, i). The sample is the longest
// run of sentences in key order (a uniformly random order of the stream) that fits both bounds:
// a bottom-k sample whose k is set by the bytes. It is kept in a max-heap on the key: a new
// sentence goes in, the largest keys are evicted until the sample fits, and an evicted key
// becomes a threshold that later keys must be below (else the sample would not be a run of the
// random order any more). With equal-length sentences and no byte bound it keeps each sentence
// with probability capacity / seen, as reservoir sampling does.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace linformer::data {

class SentenceSampler {
 public:
  SentenceSampler(int64_t max_sentences, uint64_t max_bytes, uint64_t seed);
  void add(std::string_view sentence);

  int64_t seen() const { return seen_; }
  uint64_t seen_bytes() const { return seen_bytes_; }
  int64_t size() const { return static_cast<int64_t>(heap_.size()); }
  uint64_t bytes() const { return bytes_; }  // of text held, ≤ max_bytes
  // Which bound stopped the sample (both false when the whole stream fits).
  bool bytes_bound() const { return evicted_for_bytes_; }
  bool sentences_bound() const { return evicted_for_count_; }

  // The sample in stream order (so a stream that fits whole is handed over unchanged); the
  // sampler is empty afterwards.
  std::vector<std::string> take();

 private:
  struct Entry {
    uint64_t key;
    int64_t index;  // in the stream; breaks ties between equal keys
    size_t slot;    // in slots_
    bool operator<(const Entry& o) const { return key != o.key ? key < o.key : index < o.index; }
  };
  void evict_largest();

  int64_t max_sentences_;
  uint64_t max_bytes_;
  uint64_t seed_;
  int64_t seen_ = 0;
  uint64_t seen_bytes_ = 0;
  uint64_t bytes_ = 0;
  std::vector<Entry> heap_;  // max-heap on (key, index)
  std::vector<std::string> slots_;
  std::vector<size_t> free_slots_;
  bool has_threshold_ = false;
  Entry threshold_{};  // the last evicted entry: sentences at or above it are never taken
  bool evicted_for_bytes_ = false, evicted_for_count_ = false;
};

}  // namespace linformer::data

#include "linformer/data/sentence_sampler.h"

#include "linformer/core/check.h"
#include "linformer/core/rng.h"

#include <algorithm>

namespace linformer::data {

namespace {
constexpr uint64_t kSampleStream = 0x53504D53414D504Cull;  // "SPMSAMPL"
}  // namespace

SentenceSampler::SentenceSampler(int64_t max_sentences, uint64_t max_bytes, uint64_t seed)
    : max_sentences_(max_sentences), max_bytes_(max_bytes), seed_(seed) {
  LF_CHECK(max_sentences > 0, "sample capacity {} sentences must be positive", max_sentences);
  LF_CHECK(max_bytes > 0, "sample capacity {} bytes must be positive", max_bytes);
}

void SentenceSampler::add(std::string_view sentence) {
  const int64_t index = seen_++;
  seen_bytes_ += sentence.size();
  const Entry probe{Rng(seed_, stream_id({kSampleStream, static_cast<uint64_t>(index)})).next_u64(), index, 0};
  if (has_threshold_ && !(probe < threshold_)) return;
  if (sentence.size() > max_bytes_) {  // can never fit: as if added, then evicted with every larger key
    while (!heap_.empty() && probe < heap_.front()) evict_largest();
    threshold_ = probe;
    has_threshold_ = evicted_for_bytes_ = true;
    return;
  }
  Entry e = probe;
  if (free_slots_.empty()) {
    e.slot = slots_.size();
    slots_.emplace_back(sentence);
  } else {
    e.slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[e.slot].assign(sentence);
  }
  bytes_ += sentence.size();
  heap_.push_back(e);
  std::push_heap(heap_.begin(), heap_.end());
  while (bytes_ > max_bytes_ || size() > max_sentences_) {
    (bytes_ > max_bytes_ ? evicted_for_bytes_ : evicted_for_count_) = true;
    evict_largest();
  }
}

void SentenceSampler::evict_largest() {
  std::pop_heap(heap_.begin(), heap_.end());
  const Entry e = heap_.back();
  heap_.pop_back();
  bytes_ -= slots_[e.slot].size();
  std::string().swap(slots_[e.slot]);  // give the memory back, not just the length
  free_slots_.push_back(e.slot);
  threshold_ = e;  // every entry left is below it, and so was every earlier threshold's
  has_threshold_ = true;
}

std::vector<std::string> SentenceSampler::take() {
  std::sort(heap_.begin(), heap_.end(), [](const Entry& a, const Entry& b) { return a.index < b.index; });
  std::vector<std::string> sample;
  sample.reserve(heap_.size());
  for (const Entry& e : heap_) sample.push_back(std::move(slots_[e.slot]));
  heap_.clear();
  slots_.clear();
  slots_.shrink_to_fit();
  free_slots_.clear();
  bytes_ = 0;
  return sample;
}

}  // namespace linformer::data

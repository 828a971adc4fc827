#pragma once
// The unigram baseline: a model that knows only how often each token occurs in the
// training split. Every masked-LM perplexity is read against it: a model below this line
// has learned something from context, a model on it knows word frequencies only.
//
// Scored tokens are the ordinary ones (ids ≥ kFirstOrdinaryId), the only ones masking
// selects, with add-½ smoothing over the V − 5 ordinary ids:
//   p(w) = (count(w) + ½) / (N + ½ (V − 5)),   N = ordinary tokens of the training split.

#include "linformer/data/shard.h"

#include <cstdint>
#include <vector>

namespace linformer::data {

class UnigramModel {
 public:
  static constexpr double kSmoothing = 0.5;
  static constexpr const char* kDescription =
      "token frequencies of the training split, add-1/2 smoothing over the ordinary tokens";

  // From the training split's count of each id (V), e.g. kept while encoding, so that a large
  // corpus's shards need not be read again.
  explicit UnigramModel(const std::vector<int64_t>& train_counts);
  // Counts the ordinary tokens of the training split.
  explicit UnigramModel(const Shard& train);

  int vocab_size() const { return static_cast<int>(nll_.size()); }
  int64_t train_tokens() const { return train_tokens_; }  // N
  // −log p(id) in nats; id must be ordinary.
  double nll(int32_t id) const { return nll_[static_cast<size_t>(id)]; }
  // exp(mean −log p) over the ordinary tokens of `split` (1 when it has none).
  double perplexity(const Shard& split) const;
  // The same from the split's count of each id (V).
  double perplexity(const std::vector<int64_t>& counts) const;
  // Each id's count in a shard (V).
  static std::vector<int64_t> count(const Shard& shard);

 private:
  std::vector<double> nll_;  // (V) −log p; 0 for the special ids, which are never scored
  int64_t train_tokens_ = 0;
};

}  // namespace linformer::data

#include "linformer/data/unigram.h"

#include "linformer/core/check.h"
#include "linformer/data/special_tokens.h"

#include <cmath>

namespace linformer::data {

UnigramModel::UnigramModel(const Shard& train) {
  const int V = train.vocab_size();
  LF_CHECK(V > kFirstOrdinaryId, "{}: a vocabulary of {} has no ordinary tokens", train.path(), V);
  std::vector<int64_t> counts(static_cast<size_t>(V), 0);
  for (uint64_t i = 0; i < train.token_count(); ++i) ++counts[static_cast<size_t>(train.token(i))];
  for (int id = kFirstOrdinaryId; id < V; ++id) train_tokens_ += counts[static_cast<size_t>(id)];
  const double total = static_cast<double>(train_tokens_) + kSmoothing * (V - kFirstOrdinaryId);
  nll_.assign(static_cast<size_t>(V), 0.0);
  for (int id = kFirstOrdinaryId; id < V; ++id)
    nll_[static_cast<size_t>(id)] = -std::log((static_cast<double>(counts[static_cast<size_t>(id)]) + kSmoothing) / total);
}

double UnigramModel::perplexity(const Shard& split) const {
  LF_CHECK(split.vocab_size() == vocab_size(), "{} has a vocabulary of {}, the unigram model {}", split.path(),
           split.vocab_size(), vocab_size());
  double sum = 0;
  int64_t scored = 0;
  for (uint64_t i = 0; i < split.token_count(); ++i) {
    const int32_t id = split.token(i);
    if (id < kFirstOrdinaryId) continue;
    sum += nll(id);
    ++scored;
  }
  return scored ? std::exp(sum / static_cast<double>(scored)) : 1.0;
}

}  // namespace linformer::data

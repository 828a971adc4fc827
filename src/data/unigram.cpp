#include "linformer/data/unigram.h"

#include "linformer/core/check.h"
#include "linformer/data/special_tokens.h"

#include <cmath>

namespace linformer::data {

std::vector<int64_t> UnigramModel::count(const Shard& shard) {
  const int V = shard.vocab_size();
  std::vector<int64_t> counts(static_cast<size_t>(V), 0);
  for (uint64_t i = 0; i < shard.token_count(); ++i) ++counts[static_cast<size_t>(shard.token(i))];
  return counts;
}

UnigramModel::UnigramModel(const std::vector<int64_t>& counts) {
  const int V = static_cast<int>(counts.size());
  LF_CHECK(V > kFirstOrdinaryId, "a vocabulary of {} has no ordinary tokens", V);
  for (int id = kFirstOrdinaryId; id < V; ++id) train_tokens_ += counts[static_cast<size_t>(id)];
  const double total = static_cast<double>(train_tokens_) + kSmoothing * (V - kFirstOrdinaryId);
  nll_.assign(static_cast<size_t>(V), 0.0);
  for (int id = kFirstOrdinaryId; id < V; ++id)
    nll_[static_cast<size_t>(id)] =
        -std::log((static_cast<double>(counts[static_cast<size_t>(id)]) + kSmoothing) / total);
}

UnigramModel::UnigramModel(const Shard& train)
    : UnigramModel(with_context(train.path(), [&] { return count(train); })) {}

double UnigramModel::perplexity(const Shard& split) const {
  LF_CHECK(split.vocab_size() == vocab_size(), "{} has a vocabulary of {}, the unigram model {}", split.path(),
           split.vocab_size(), vocab_size());
  return perplexity(count(split));
}

double UnigramModel::perplexity(const std::vector<int64_t>& counts) const {
  LF_CHECK(static_cast<int>(counts.size()) == vocab_size(), "counts of a vocabulary of {}, the unigram model {}",
           counts.size(), vocab_size());
  // Summed by id, not token by token: a shard and the counts kept while encoding give the same bits.
  double sum = 0;
  int64_t scored = 0;
  for (int id = kFirstOrdinaryId; id < vocab_size(); ++id) {
    sum += static_cast<double>(counts[static_cast<size_t>(id)]) * nll(id);
    scored += counts[static_cast<size_t>(id)];
  }
  return scored ? std::exp(sum / static_cast<double>(scored)) : 1.0;
}

}  // namespace linformer::data

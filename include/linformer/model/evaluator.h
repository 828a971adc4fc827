#pragma once
// Masked-LM loss, perplexity and accuracy of a model over a batcher's batches
// (dropout off; the batcher's fixed masks make repeated evaluations comparable).

#include "linformer/data/batcher.h"
#include "linformer/data/unigram.h"
#include "linformer/model/mlm_model.h"

#include <cmath>
#include <cstdint>
#include <functional>

namespace linformer {

struct EvalResult {
  double loss_sum = 0;  // nats
  int64_t masked = 0;
  int64_t correct = 0;
  int64_t batches = 0;
  int64_t tokens = 0;           // real tokens read
  double unigram_loss_sum = 0;  // nats of the unigram baseline on the same targets (when one was given)

  double loss() const { return masked ? loss_sum / static_cast<double>(masked) : 0.0; }
  double perplexity() const { return std::exp(loss()); }
  double accuracy() const { return masked ? static_cast<double>(correct) / static_cast<double>(masked) : 0.0; }
  double unigram_perplexity() const { return std::exp(masked ? unigram_loss_sum / static_cast<double>(masked) : 0.0); }
};

// One process's share of an evaluation shared out among `count` processes.
struct EvalShard {
  int index = 0;
  int count = 1;
};

// Batches 0 … of epoch 0 (all, or the first max_batches when > 0). With a unigram model,
// also scores it on the same masked targets (unigram_loss_sum). Shared out: the first
// max_batches·count batches (or all), shard.index taking every count-th from its own index,
// so the shards' sums are one process's evaluation with count times the batch size.
// `rearrange`, when given, changes each batch before the model reads it (data::shuffle_words);
// `observe`, after the model's forward pass, sees the batch as the model read it (model.logits()
// then describe it).
using EvalObserver = std::function<void(const data::Batch&, const MlmModel&)>;
EvalResult evaluate(MlmModel& model, data::Batcher& batcher, int64_t max_batches,
                    const data::UnigramModel* unigram = nullptr, EvalShard shard = {},
                    const std::function<void(data::Batch&)>& rearrange = {}, const EvalObserver& observe = {});

}  // namespace linformer

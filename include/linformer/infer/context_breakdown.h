#pragma once
// Masked-LM scores split by whether the target word can be copied from the row: its id occurs at
// another position of the row the model reads (the input after masking, <s> to the row's length).
// A model that can look up any position (full attention) should gain most on those targets; one
// that sees keys and values only as k mixtures of positions (Linformer) has a harder time copying.

#include "linformer/core/tensor.h"
#include "linformer/data/batcher.h"
#include "linformer/data/unigram.h"

#include <cmath>
#include <cstdint>

namespace linformer {

struct ContextGroup {
  double loss_sum = 0;          // nats
  int64_t masked = 0;
  int64_t correct = 0;          // argmax over the whole vocabulary is the target
  double unigram_loss_sum = 0;  // the unigram baseline on the same targets (when one was given)

  double loss() const { return masked ? loss_sum / static_cast<double>(masked) : 0.0; }
  double perplexity() const { return std::exp(loss()); }
  double accuracy() const { return masked ? static_cast<double>(correct) / static_cast<double>(masked) : 0.0; }
  double unigram_perplexity() const { return std::exp(masked ? unigram_loss_sum / static_cast<double>(masked) : 0.0); }
};

struct ContextBreakdown {
  ContextGroup in_context;      // the target's id is elsewhere in the row's input
  ContextGroup not_in_context;  // it is not

  // Adds a batch's targets, scored from the logits the model computed for it: (M, V), one row per
  // batch.target_positions entry, in that order.
  void add(const data::Batch& batch, TensorView<const float> logits, const data::UnigramModel* unigram);
};

}  // namespace linformer

#pragma once
// Masked-LM scores split by whether the target word can be copied from the row: its id occurs at
// another position of the row the model reads (the input after masking, <s> to the row's length).
// A model that can look up any position (full attention) should gain most on those targets; one
// that sees keys and values only as k mixtures of positions (Linformer) has a harder time copying.

#include "linformer/core/tensor.h"
#include "linformer/data/batcher.h"
#include "linformer/data/unigram.h"
#include "linformer/model/evaluator.h"

namespace linformer {

// Each group's loss_sum, masked, correct (argmax over the whole vocabulary) and unigram_loss_sum;
// batches and tokens stay 0.
struct ContextBreakdown {
  EvalResult in_context;      // the target's id is elsewhere in the row's input
  EvalResult not_in_context;  // it is not

  // Adds a batch's targets, scored from the logits the model computed for it: (M, V), one row per
  // batch.target_positions entry, in that order.
  void add(const data::Batch& batch, TensorView<const float> logits, const data::UnigramModel* unigram);
};

}  // namespace linformer

#pragma once
// Using a trained checkpoint: perplexity on a prepared split or on raw text
// (`linformer eval`), and masked-token predictions (`linformer fill-mask`).
// A checkpoint directory is self-contained: weights, tokenizer and recipe.

#include "linformer/infer/context_breakdown.h"
#include "linformer/model/evaluator.h"

#include <optional>
#include <string>
#include <vector>

namespace linformer {

struct EvalOptions {
  std::string checkpoint;
  std::string split = "valid";          // valid or test, when no text files are given
  std::vector<std::string> text_files;  // raw text (any corpus format), tokenised with the checkpoint's tokenizer
  int batch_size = 0;                   // 0: the recipe's train.batch_size
  int64_t max_batches = 0;              // 0: everything
  bool shuffle_words = false;           // also evaluate with each sequence's words shuffled (data/word_order.h)
  bool by_context = false;              // also score targets copyable from their row apart (context_breakdown.h)
  bool same_targets = false;            // mask by each token's place in the split, not by block: the same
                                        // targets at every n (Masker::mask_row_by_stream)
};

struct EvalReport {
  EvalResult result;
  std::string source;                  // what was evaluated
  std::string checkpoint;              // the checkpoint directory used (a run directory resolves to its newest)
  bool has_unigram = false;            // result.unigram_perplexity() is the baseline of the checkpoint's training split
  std::optional<EvalResult> shuffled;  // with --shuffle-words: the same masked targets, words in random order
  std::optional<ContextBreakdown> by_context;  // with --by-context: the ordered evaluation's targets in two groups
  // With --same-targets: a digest of the scored targets (each one's place in the split and id, in
  // any order): two evaluations with equal digests scored the same tokens.
  std::optional<uint64_t> targets_digest;
};

EvalReport run_eval(const EvalOptions& options);

struct FillMaskPrediction {
  int token_id;
  std::string token;  // the piece, "▁" shown as a leading space
  double probability;
  std::string sequence;  // the text with this mask filled by the token
};

// For each <mask> in `text` (in order), the top_k predictions.
std::vector<std::vector<FillMaskPrediction>> fill_mask(const std::string& checkpoint, const std::string& text,
                                                       int top_k);

}  // namespace linformer

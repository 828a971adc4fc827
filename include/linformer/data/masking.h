#pragma once
// Masked-LM corruption of one row, deterministic in (seed, epoch, sample index).
//
// Candidates are the ordinary tokens (id ≥ kFirstOrdinaryId): <pad>, <s>, </s>,
// <unk> and <mask> are never selected. Units are single tokens, or with whole-word
// masking whole words (a piece starting with "▁" begins a word; so does the token
// after a special one). Of m units, floor(p·m + u) (u uniform in [0, 1)) are chosen
// without replacement, so the expected rate is exactly p; each chosen unit is
// replaced by <mask> with probability mask_fraction, by random ordinary tokens with
// probability random_fraction, and left unchanged otherwise. Every token of a chosen
// unit is a prediction target.
//
// The draws for a row come from Rng(seed, stream_id({masking, epoch, sample})), so
// a row's mask does not depend on the batch it is in, the thread that masks it or
// anything masked before: a resumed run sees the masks an uninterrupted one would.

#include "linformer/config/recipe.h"

#include <cstdint>
#include <vector>

namespace linformer::data {

class Masker {
 public:
  // word_starts: (V) 1 where the piece begins a word (Tokenizer::word_starts()); needed for whole_word.
  Masker(const config::MaskingConfig& config, int vocab_size, std::vector<uint8_t> word_starts, uint64_t seed);

  // Masks row[0, length) in place. For each target t, in increasing order, appends
  // offset + t to positions and the original id to targets.
  void mask_row(int32_t* row, int length, uint64_t epoch, uint64_t sample, int64_t offset,
                std::vector<int64_t>& positions, std::vector<int32_t>& targets) const;

  const config::MaskingConfig& config() const { return config_; }

 private:
  config::MaskingConfig config_;
  int vocab_size_;
  std::vector<uint8_t> word_starts_;
  uint64_t seed_;
};

// The masking of validation and eval: the recipe's, with validation.mask_probability in place
// of masking.probability when it is set.
config::MaskingConfig validation_masking(const config::Recipe& recipe);

}  // namespace linformer::data

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
#include "linformer/core/rng.h"

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

  // Masks row[0, length) in place like mask_row, but each unit's draws come from its position in
  // the split's token stream, not from the row: row[t] (t ≥ 1; row[0] is <s>) is the stream's token
  // stream_begin + t - 1, and a unit is a target with probability p on its own (Rng(seed, stream
  // position of its first token)). Any cut of the stream into blocks, at any n, so masks the same
  // tokens the same way (with whole-word masking, cuts between words: every break mode but "none"
  // cuts at sentence ends), and models of different n are scored on the same targets (`eval
  // --same-targets`). The rate is p in expectation, not per row.
  void mask_row_by_stream(int32_t* row, int length, uint64_t stream_begin, int64_t offset,
                          std::vector<int64_t>& positions, std::vector<int32_t>& targets) const;

  const config::MaskingConfig& config() const { return config_; }

 private:
  // The candidate units of row[0, length): unit u is cand[unit_begin[u], unit_begin[u + 1]).
  void find_units(const int32_t* row, int length, std::vector<int>& cand, std::vector<int>& unit_begin) const;
  // Unit u becomes a target: its positions and ids appended, its tokens replaced as draw r says.
  void corrupt_unit(int32_t* row, const std::vector<int>& cand, const std::vector<int>& unit_begin, int u, double r,
                    Rng& rng, int64_t offset, std::vector<int64_t>& positions, std::vector<int32_t>& targets) const;

  config::MaskingConfig config_;
  int vocab_size_;
  std::vector<uint8_t> word_starts_;
  uint64_t seed_;
};

// The masking of validation and eval: the recipe's, with validation.mask_probability in place
// of masking.probability when it is set.
config::MaskingConfig validation_masking(const config::Recipe& recipe);

}  // namespace linformer::data

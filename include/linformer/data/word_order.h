#pragma once
// Word order taken away from a masked batch, to measure how much a model uses it.
//
// shuffle_words permutes the words of every row: the same tokens, the same masked
// targets (each travels with its word), in another order. A model that has learned
// only which words occur together scores about the same on shuffled rows; one that
// reads syntax scores much worse (`linformer eval --shuffle-words`).
//
// A word is a piece that begins with "▁" and the continuation pieces after it,
// judged on the original ids (a <mask> hides whether its piece began a word); a
// continuation at the start of a row is a word of its own. Special tokens (<s>,
// </s>, <pad>) stay where they are and words move only between them, so sentence
// boundaries and lengths are kept. The permutation of a row comes from
// Rng(seed, stream_id({word order, block id})): independent of the batch it is in.

#include "linformer/data/batcher.h"

#include <cstdint>
#include <vector>

namespace linformer::data {

// word_starts: (V) 1 where the piece begins a word (Tokenizer::word_starts()).
void shuffle_words(Batch& batch, const std::vector<uint8_t>& word_starts, uint64_t seed);

}  // namespace linformer::data

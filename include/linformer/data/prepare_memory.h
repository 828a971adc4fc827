#pragma once
// How much memory `linformer prepare` needs, checked before the phase that grows with its
// settings (training the tokenizer), so a run that cannot fit is refused before it allocates,
// naming the key to lower, rather than killed (or taking the machine down) halfway.
//
// What each phase holds, and why only the tokenizer's is estimated:
//   reading (pass 1)  one document at a time (a document must fit: a file without blank lines is
//                     one document) plus the tokenizer's sample, ≤ data.tokenizer_max_bytes of text;
//   tokenizer         SentencePiece's trainer: about kTrainerBytesPerSampleByte times the sample's
//                     bytes (its suffix array and piece tables), the one phase that grew to 22 GB;
//   encoding (pass 2) two chunks of ≤ 2 MiB of text and their ids, whatever the corpus size;
//   writing           the shards stream to disk; each keeps its document index in memory, 8 bytes
//                     a document (2.6 MB for a 10 GB Wikipedia-like corpus of 330k documents);
//   unigram baseline  counts per vocabulary id, O(V).

#include "linformer/core/system_memory.h"

#include <cstdint>

namespace linformer::data {

// Peak RSS of prepare while SentencePiece trains, per byte of sample text. Measured in
// results/2026-11-28_zen5_tokenizer_sample (unigram, vocabularies 8000 and 32000, samples of 1–64 MB
// and more): 23.6 bytes per byte beyond a base of about 28 MB, the same for both vocabularies. 30
// (with the base and per-sentence terms below) overestimates every measured peak by a quarter or more.
inline constexpr double kTrainerBytesPerSampleByte = 30.0;
// Per sentence of the sample: its std::string in the sample, then SentencePiece's own copy and entry.
inline constexpr double kTrainerBytesPerSentence = 200.0;
// The process before the sample: the binary, its libraries, the reader's buffers.
inline constexpr double kPrepareBaseBytes = 64.0 * 1024 * 1024;

double tokenizer_training_bytes(uint64_t sample_bytes, int64_t sample_sentences);

// Throws linformer::Error, naming data.tokenizer_max_bytes, the estimate and the limit, when training
// on this sample cannot fit in `available` (nothing is checked when it is unknown). Before reading,
// sample_sentences = 0: the bytes' bound alone.
void check_tokenizer_fits(uint64_t sample_bytes, int64_t sample_sentences, const AvailableMemory& available);

}  // namespace linformer::data

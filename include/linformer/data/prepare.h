#pragma once
// `linformer prepare`: corpus → tokenizer → token shards → splits, in data.prepared_dir:
//   spm.model                        the SentencePiece model (trained, or a copy of data.tokenizer_model)
//   train.bin, valid.bin, test.bin   token shards (data/shard.h)
//   meta.json                        special ids, vocabulary, counts, the unigram baseline's
//                                    perplexities, the cache key; written last
// Everything is built in a temporary directory beside the target and renamed into
// place at the end, so a failed or interrupted run leaves the old state (or none).

#include "linformer/config/recipe.h"
#include "linformer/core/system_memory.h"
#include "linformer/data/split.h"

#include <array>
#include <cstdint>
#include <string>

namespace linformer::data {

inline constexpr int kPreparedVersion = 1;

struct SplitCounts {
  int64_t documents = 0;
  int64_t tokens = 0;
};

struct PrepareSummary {
  bool reused = false;  // an up-to-date prepared_dir was found; nothing was redone
  std::string dir;
  std::string key;  // hash of the data settings and the corpus files' paths, sizes and mtimes
  int64_t files = 0, documents = 0, sentences = 0, tokens = 0, unknown_tokens = 0, invalid_utf8 = 0;
  uint64_t file_bytes = 0, text_bytes = 0, output_bytes = 0;
  std::array<SplitCounts, 3> splits{};  // indexed by Split
  int vocab_size = 0;
  // The tokenizer's sample (0 when data.tokenizer_model is given or the directory is reused).
  int64_t sample_sentences = 0;
  uint64_t sample_bytes = 0;
  double seconds = 0, encode_seconds = 0;
  // Phases: reading and sampling (pass 1), the tokenizer (training or loading), encoding and routing to
  // the splits' shards (pass 2, encode_seconds), writing (shard indexes, the unigram baseline, meta.json).
  double read_seconds = 0, tokenizer_seconds = 0, write_seconds = 0;
  uint64_t peak_rss_bytes = 0;  // of the process at the end: the largest phase's
  // The unigram baseline (data/unigram.h) on the valid and test splits' ordinary tokens
  // (0 when a split is empty, or when reusing a directory prepared before it was recorded).
  double unigram_valid_perplexity = 0, unigram_test_perplexity = 0;
};

// Where the memory available comes from: available_memory(), or a test's small limit.
using MemoryProbe = AvailableMemory (*)();

// Runs (or reuses) the preparation; throws linformer::Error for bad input, and before the
// tokenizer's training when it cannot fit in `available()` memory (data/prepare_memory.h).
PrepareSummary prepare_data(const config::Recipe& recipe, bool force, MemoryProbe available = available_memory);

// Logs the summary: documents, tokens, unknown-token rate, bytes, time, MB/s.
void log_prepare_summary(const PrepareSummary& summary);

}  // namespace linformer::data

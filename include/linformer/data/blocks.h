#pragma once
// Blocks of at most n tokens cut from a token stream (a shard, or text encoded in memory),
// like fairseq's TokenBlockDataset.
//
// Each block holds up to n - 1 consecutive tokens of the shard; a row of the
// batch is <s> + the block + <pad> up to n. Sentences end with </s> (which stays
// in the block). Break modes:
//   none          fixed windows of n - 1 tokens over the whole stream (across sentences and documents)
//   complete      as many whole sentences as fit, across documents
//   complete_doc  as many whole sentences as fit, never across documents
//   eos           one sentence per block
// A sentence longer than n - 1 tokens is cut into windows of n - 1 (fairseq keeps it
// whole and overlong, which the model's positions could not hold); in complete modes
// the last window may be followed by more sentences.

#include "linformer/config/recipe.h"
#include "linformer/data/token_stream.h"

#include <cstdint>
#include <vector>

namespace linformer::data {

struct Block {
  uint64_t begin;   // first token in the stream
  uint32_t length;  // tokens, 1 ≤ length ≤ n - 1
};

// The blocks of a stream given by its sentence and document ends (exposed for tests).
// sentence_ends: increasing token offsets where sentences end; document_ends likewise,
// each also a sentence end.
std::vector<Block> cut_blocks(uint64_t token_count, const std::vector<uint64_t>& sentence_ends,
                              const std::vector<uint64_t>& document_ends, int seq_len, config::BreakMode mode);

class TokenBlocks {
 public:
  // Scans the stream once for sentence ends (</s>) and document ends; keeps a reference to it.
  TokenBlocks(const TokenStream& tokens, int seq_len, config::BreakMode mode);

  int64_t size() const { return static_cast<int64_t>(blocks_.size()); }
  int seq_len() const { return seq_len_; }
  const Block& block(int64_t i) const { return blocks_[static_cast<size_t>(i)]; }

  // Writes row i: <s>, the block's tokens, <pad> up to n; returns its length (<s> included). out: (n).
  int fill_row(int64_t i, int32_t* out) const;

 private:
  const TokenStream* tokens_;
  int seq_len_;
  std::vector<Block> blocks_;
};

}  // namespace linformer::data

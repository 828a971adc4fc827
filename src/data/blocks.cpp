#include "linformer/data/blocks.h"

#include "linformer/core/check.h"
#include "linformer/data/special_tokens.h"

#include <algorithm>

namespace linformer::data {

using config::BreakMode;

std::vector<Block> cut_blocks(uint64_t token_count, const std::vector<uint64_t>& sentence_ends,
                              const std::vector<uint64_t>& document_ends, int seq_len, BreakMode mode) {
  LF_CHECK(seq_len >= 2, "seq_len {} leaves no room after <s>", seq_len);
  const uint64_t size = static_cast<uint64_t>(seq_len) - 1;  // room after <s>
  std::vector<Block> blocks;
  auto emit = [&](uint64_t begin, uint64_t end) {
    if (end > begin) blocks.push_back({begin, static_cast<uint32_t>(end - begin)});
  };

  if (mode == BreakMode::none) {
    for (uint64_t b = 0; b < token_count; b += size) emit(b, std::min(token_count, b + size));
    return blocks;
  }
  uint64_t begin = 0, end = 0;  // the block being filled: [begin, end)
  size_t next_doc = 0;
  uint64_t sentence_begin = 0;
  for (const uint64_t sentence_end : sentence_ends) {
    // Windows of a sentence too long for one block; the last window continues below.
    uint64_t s = sentence_begin;
    if (sentence_end - s > size) {
      emit(begin, end);
      while (sentence_end - s > size) {
        emit(s, s + size);
        s += size;
      }
      begin = end = s;
    }
    if (mode == BreakMode::eos || (sentence_end - begin > size)) {
      emit(begin, end);
      begin = s;
    }
    end = sentence_end;
    if (mode == BreakMode::eos) {
      emit(begin, end);
      begin = end;
    }
    while (next_doc < document_ends.size() && document_ends[next_doc] <= sentence_end) {
      if (mode == BreakMode::complete_doc && document_ends[next_doc] == sentence_end) {
        emit(begin, end);
        begin = end;
      }
      ++next_doc;
    }
    sentence_begin = sentence_end;
  }
  emit(begin, end);
  return blocks;
}

TokenBlocks::TokenBlocks(const TokenStream& shard, int seq_len, BreakMode mode) : tokens_(&shard), seq_len_(seq_len) {
  std::vector<uint64_t> sentence_ends, document_ends;
  for (uint64_t d = 0; d < shard.document_count(); ++d) {
    const uint64_t b = shard.document_begin(d), e = shard.document_end(d);
    if (e == b) continue;
    for (uint64_t i = b; i < e; ++i)
      if (shard.token(i) == kEosId) sentence_ends.push_back(i + 1);
    if (sentence_ends.empty() || sentence_ends.back() != e) sentence_ends.push_back(e);  // no final </s>
    document_ends.push_back(e);
  }
  blocks_ = cut_blocks(shard.token_count(), sentence_ends, document_ends, seq_len, mode);
}

int TokenBlocks::fill_row(int64_t i, int32_t* out) const {
  const Block& b = block(i);
  out[0] = kBosId;
  tokens_->copy(b.begin, b.begin + b.length, out + 1);
  const int length = 1 + static_cast<int>(b.length);
  std::fill(out + length, out + seq_len_, kPadId);
  return length;
}

}  // namespace linformer::data

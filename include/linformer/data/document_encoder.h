#pragma once
// Parallel encoding of documents into token ids (OpenMP over sentences, so one
// long document does not serialise the work; results keep the input order).

#include "linformer/data/corpus.h"
#include "linformer/data/tokenizer.h"

#include <cstdint>
#include <vector>

namespace linformer::data {

struct EncodeCounts {
  int64_t tokens = 0;   // </s> included
  int64_t unknown = 0;  // <unk> ids
};

// out[d] = for each sentence of docs[d]: its ids followed by </s> (fairseq: eos after each line).
EncodeCounts encode_documents(const Tokenizer& tokenizer, const std::vector<Document>& docs,
                              std::vector<std::vector<int32_t>>& out);

}  // namespace linformer::data

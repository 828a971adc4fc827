#include "linformer/data/document_encoder.h"

#include <omp.h>

#include <exception>

namespace linformer::data {

EncodeCounts encode_documents(const Tokenizer& tokenizer, const std::vector<Document>& docs,
                              std::vector<std::vector<int32_t>>& out) {
  // Flatten to (document, sentence) so the parallel loop balances long documents.
  std::vector<std::pair<int32_t, int32_t>> items;
  for (size_t d = 0; d < docs.size(); ++d)
    for (size_t s = 0; s < docs[d].sentences.size(); ++s)
      items.emplace_back(static_cast<int32_t>(d), static_cast<int32_t>(s));
  std::vector<std::vector<int>> ids(items.size());
  std::exception_ptr error;
  const int64_t n = static_cast<int64_t>(items.size());
#pragma omp parallel for schedule(dynamic, 8)
  for (int64_t i = 0; i < n; ++i) {
    try {
      const auto [d, s] = items[static_cast<size_t>(i)];
      tokenizer.encode(docs[static_cast<size_t>(d)].sentences[static_cast<size_t>(s)], ids[static_cast<size_t>(i)]);
    } catch (...) {
#pragma omp critical
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);

  EncodeCounts counts;
  out.assign(docs.size(), {});
  for (size_t i = 0; i < items.size(); ++i) {
    auto& doc = out[static_cast<size_t>(items[i].first)];
    for (int id : ids[i]) {
      counts.unknown += id == kUnkId;
      doc.push_back(id);
    }
    doc.push_back(kEosId);
    counts.tokens += static_cast<int64_t>(ids[i].size()) + 1;
  }
  return counts;
}

}  // namespace linformer::data

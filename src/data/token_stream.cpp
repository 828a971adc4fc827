#include "linformer/data/token_stream.h"

#include <algorithm>

namespace linformer::data {

void EncodedText::add_document(const std::vector<int32_t>& ids) {
  tokens_.insert(tokens_.end(), ids.begin(), ids.end());
  offsets_.push_back(tokens_.size());
}

void EncodedText::copy(uint64_t begin, uint64_t end, int32_t* out) const {
  std::copy(tokens_.begin() + static_cast<std::ptrdiff_t>(begin), tokens_.begin() + static_cast<std::ptrdiff_t>(end),
            out);
}

}  // namespace linformer::data

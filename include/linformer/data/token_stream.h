#pragma once
// Encoded text as token blocks read it: token ids and document boundaries. A memory-mapped
// shard is one (data/shard.h); EncodedText holds text encoded on the fly (`eval --text`), so
// evaluating raw text needs no temporary file.

#include <cstdint>
#include <vector>

namespace linformer::data {

class TokenStream {
 public:
  virtual ~TokenStream() = default;
  virtual uint64_t token_count() const = 0;
  virtual int32_t token(uint64_t i) const = 0;
  // Tokens [begin, end) into out[0, end - begin).
  virtual void copy(uint64_t begin, uint64_t end, int32_t* out) const = 0;
  virtual uint64_t document_count() const = 0;
  virtual uint64_t document_begin(uint64_t d) const = 0;
  virtual uint64_t document_end(uint64_t d) const = 0;
};

class EncodedText final : public TokenStream {
 public:
  void add_document(const std::vector<int32_t>& ids);

  uint64_t token_count() const override { return tokens_.size(); }
  int32_t token(uint64_t i) const override { return tokens_[i]; }
  void copy(uint64_t begin, uint64_t end, int32_t* out) const override;
  uint64_t document_count() const override { return offsets_.size() - 1; }
  uint64_t document_begin(uint64_t d) const override { return offsets_[d]; }
  uint64_t document_end(uint64_t d) const override { return offsets_[d + 1]; }

 private:
  std::vector<int32_t> tokens_;
  std::vector<uint64_t> offsets_{0};  // (D + 1): document d is tokens [offsets_[d], offsets_[d + 1])
};

}  // namespace linformer::data

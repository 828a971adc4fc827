#pragma once
// Token shards: the encoded corpus of one split, memory-mapped for reading.
//
// File layout (little-endian), format version 1:
//   [0, 64)                  ShardHeader
//   [64, 64 + T·w)           token ids, w = 2 bytes (uint16, vocab ≤ 65536) or 4 (uint32)   (T)
//   zero padding to a multiple of 8 bytes
//   document offsets         uint64 × (D + 1): document d is tokens [off[d], off[d+1])      (D+1)
// ShardHeader::checksum is the zlib crc32 of the whole file with that field zeroed.
// Every sentence ends with </s>, so sentence boundaries need no index of their own.
//
// A ShardWriter writes to a temporary name and renames it only when complete, so an
// interrupted writer never leaves a file that looks like a shard.

#include "linformer/data/token_stream.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace linformer::data {

inline constexpr char kShardMagic[8] = {'L', 'F', 'S', 'H', 'A', 'R', 'D', '\0'};
inline constexpr uint32_t kShardVersion = 1;

struct ShardHeader {
  char magic[8];
  uint32_t version;
  uint32_t token_bytes;     // 2 or 4
  uint64_t token_count;     // T
  uint64_t document_count;  // D
  uint64_t vocab_hash;      // Tokenizer::hash() of the vocabulary the ids belong to
  uint32_t vocab_size;
  uint32_t checksum;    // crc32, see above
  uint64_t file_bytes;  // total size: catches truncation before the checksum is computed
  uint8_t reserved[8];
};
static_assert(sizeof(ShardHeader) == 64, "the header is 64 bytes on disk");

// Bytes per token id for a vocabulary: 2 when the ids fit uint16, else 4.
inline uint32_t token_bytes_for(int vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

class ShardWriter {
 public:
  ShardWriter(std::string path, int vocab_size, uint64_t vocab_hash);
  ~ShardWriter();  // removes the temporary file unless finish() succeeded
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Appends one document; every id must be in [0, vocab_size).
  void add_document(const std::vector<int32_t>& ids);
  // Writes the index and header, syncs and renames to the final path.
  void finish();

  uint64_t token_count() const { return token_count_; }
  uint64_t document_count() const { return offsets_.size() - 1; }
  const std::string& path() const { return path_; }

 private:
  void write(const void* data, size_t bytes);

  std::string path_, tmp_path_;
  FILE* file_ = nullptr;
  uint32_t vocab_size_;
  uint64_t vocab_hash_;
  uint32_t token_bytes_;
  uint64_t token_count_ = 0;
  uint64_t written_ = 0;   // bytes after the header
  uint32_t body_crc_ = 0;  // crc32 of those bytes
  std::vector<uint64_t> offsets_{0};
  std::vector<unsigned char> staging_;
  bool finished_ = false;
};

class Shard final : public TokenStream {
 public:
  // Maps `path` and checks its header, size and index; with verify_checksum also the crc32
  // of every byte. Throws linformer::Error naming the file and what does not match.
  static Shard open(const std::string& path, bool verify_checksum = true);

  Shard(Shard&&) noexcept;
  Shard& operator=(Shard&&) noexcept;
  ~Shard();

  const std::string& path() const { return path_; }
  uint64_t token_count() const override { return header_.token_count; }
  uint64_t document_count() const override { return header_.document_count; }
  int vocab_size() const { return static_cast<int>(header_.vocab_size); }
  uint64_t vocab_hash() const { return header_.vocab_hash; }
  uint32_t checksum() const { return header_.checksum; }  // the crc32 its header records
  uint32_t token_bytes() const { return header_.token_bytes; }

  int32_t token(uint64_t i) const override {
    return header_.token_bytes == 2 ? static_cast<int32_t>(tokens16()[i]) : static_cast<int32_t>(tokens32()[i]);
  }
  // Tokens [begin, end) converted to int32 into out[0, end - begin).
  void copy(uint64_t begin, uint64_t end, int32_t* out) const override;
  uint64_t document_begin(uint64_t d) const override { return offsets_[d]; }
  uint64_t document_end(uint64_t d) const override { return offsets_[d + 1]; }

  // Recomputes the crc32 of the file; throws if it differs from the header's.
  void verify_checksum() const;

 private:
  Shard() = default;
  const uint16_t* tokens16() const { return reinterpret_cast<const uint16_t*>(base_ + sizeof(ShardHeader)); }
  const uint32_t* tokens32() const { return reinterpret_cast<const uint32_t*>(base_ + sizeof(ShardHeader)); }

  std::string path_;
  const unsigned char* base_ = nullptr;
  size_t size_ = 0;
  ShardHeader header_{};
  const uint64_t* offsets_ = nullptr;
};

}  // namespace linformer::data

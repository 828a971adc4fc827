#include "linformer/data/shard.h"

#include "linformer/core/check.h"
#include "linformer/core/checksum.h"
#include "linformer/core/fs.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace linformer::data {

namespace {

uint64_t padded_to_8(uint64_t bytes) { return (bytes + 7) / 8 * 8; }

uint64_t expected_file_bytes(const ShardHeader& h) {
  return padded_to_8(sizeof(ShardHeader) + h.token_count * h.token_bytes) + 8 * (h.document_count + 1);
}

uint32_t header_crc(ShardHeader h) {
  h.checksum = 0;
  return crc32_update(0, reinterpret_cast<const unsigned char*>(&h), sizeof h);
}

}  // namespace

// ---- Writer ---------------------------------------------------------------------

ShardWriter::ShardWriter(std::string path, int vocab_size, uint64_t vocab_hash)
    : path_(std::move(path)),
      tmp_path_(temporary_path_for(path_)),
      vocab_size_(static_cast<uint32_t>(vocab_size)),
      vocab_hash_(vocab_hash),
      token_bytes_(token_bytes_for(vocab_size)) {
  LF_CHECK(vocab_size > 0, "shard '{}': vocabulary size {} must be positive", path_, vocab_size);
  file_ = std::fopen(tmp_path_.c_str(), "wb");
  if (!file_) LF_FAIL("cannot create shard '{}': {}", tmp_path_, std::strerror(errno));
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  const ShardHeader placeholder{};  // the real header is written by finish()
  if (std::fwrite(&placeholder, sizeof placeholder, 1, file_) != 1)
    LF_FAIL("cannot write shard '{}': {}", tmp_path_, std::strerror(errno));
}

ShardWriter::~ShardWriter() {
  if (file_) std::fclose(file_);
  if (!finished_) std::remove(tmp_path_.c_str());
}

void ShardWriter::write(const void* data, size_t bytes) {
  if (bytes == 0) return;
  if (std::fwrite(data, 1, bytes, file_) != bytes)
    LF_FAIL("cannot write shard '{}': {}", tmp_path_, std::strerror(errno));
  body_crc_ = crc32_update(body_crc_, static_cast<const unsigned char*>(data), bytes);
  written_ += bytes;
}

void ShardWriter::add_document(const std::vector<int32_t>& ids) {
  LF_CHECK(!finished_, "shard '{}' is already finished", path_);
  staging_.resize(ids.size() * token_bytes_);
  if (token_bytes_ == 2) {
    auto* out = reinterpret_cast<uint16_t*>(staging_.data());
    for (size_t i = 0; i < ids.size(); ++i) {
      LF_CHECK(ids[i] >= 0 && static_cast<uint32_t>(ids[i]) < vocab_size_, "shard '{}': token id {} outside [0, {})",
               path_, ids[i], vocab_size_);
      out[i] = static_cast<uint16_t>(ids[i]);
    }
  } else {
    auto* out = reinterpret_cast<uint32_t*>(staging_.data());
    for (size_t i = 0; i < ids.size(); ++i) {
      LF_CHECK(ids[i] >= 0 && static_cast<uint32_t>(ids[i]) < vocab_size_, "shard '{}': token id {} outside [0, {})",
               path_, ids[i], vocab_size_);
      out[i] = static_cast<uint32_t>(ids[i]);
    }
  }
  write(staging_.data(), staging_.size());
  token_count_ += ids.size();
  offsets_.push_back(token_count_);
}

void ShardWriter::finish() {
  LF_CHECK(!finished_, "shard '{}' is already finished", path_);
  const uint64_t tokens_end = sizeof(ShardHeader) + written_;
  const unsigned char zeros[8] = {};
  write(zeros, padded_to_8(tokens_end) - tokens_end);
  write(offsets_.data(), offsets_.size() * sizeof(uint64_t));

  ShardHeader h{};
  std::memcpy(h.magic, kShardMagic, sizeof h.magic);
  h.version = kShardVersion;
  h.token_bytes = token_bytes_;
  h.token_count = token_count_;
  h.document_count = document_count();
  h.vocab_hash = vocab_hash_;
  h.vocab_size = vocab_size_;
  h.file_bytes = sizeof(ShardHeader) + written_;
  h.checksum = static_cast<uint32_t>(crc32_combine(header_crc(h), body_crc_, static_cast<z_off_t>(written_)));

  if (std::fseek(file_, 0, SEEK_SET) != 0 || std::fwrite(&h, sizeof h, 1, file_) != 1 || std::fflush(file_) != 0 ||
      ::fsync(::fileno(file_)) != 0)
    LF_FAIL("cannot write shard '{}': {}", tmp_path_, std::strerror(errno));
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) LF_FAIL("cannot write shard '{}': {}", tmp_path_, std::strerror(errno));
  commit_rename(tmp_path_, path_);
  finished_ = true;
}

// ---- Reader ---------------------------------------------------------------------

Shard Shard::open(const std::string& path, bool verify) {
  Shard s;
  s.path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) LF_FAIL("cannot open shard '{}': {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    LF_FAIL("cannot stat shard '{}': {}", path, std::strerror(errno));
  }
  s.size_ = static_cast<size_t>(st.st_size);
  if (s.size_ < sizeof(ShardHeader)) {
    ::close(fd);
    LF_FAIL("shard '{}' is too short ({} bytes) to be a token shard", path, s.size_);
  }
  void* p = ::mmap(nullptr, s.size_, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) LF_FAIL("cannot map shard '{}': {}", path, std::strerror(errno));
  s.base_ = static_cast<const unsigned char*>(p);
  std::memcpy(&s.header_, s.base_, sizeof s.header_);
  const ShardHeader& h = s.header_;

  if (std::memcmp(h.magic, kShardMagic, sizeof h.magic) != 0) LF_FAIL("'{}' is not a token shard (bad magic)", path);
  if (h.version != kShardVersion)
    LF_FAIL("shard '{}' has format version {}, this build reads version {}: run linformer prepare --force", path,
            h.version, kShardVersion);
  if (h.token_bytes != 2 && h.token_bytes != 4) LF_FAIL("shard '{}': invalid token width {}", path, h.token_bytes);
  if (h.vocab_size == 0 || h.vocab_size > static_cast<uint32_t>(std::numeric_limits<int>::max()))
    LF_FAIL("shard '{}': invalid vocabulary size {}", path, h.vocab_size);
  if (h.token_bytes != token_bytes_for(static_cast<int>(h.vocab_size)))
    LF_FAIL("shard '{}': token width {} does not match the vocabulary size {}", path, h.token_bytes, h.vocab_size);
  // The counts are bounded by the file's size before any arithmetic on them: T·w or 8·(D + 1)
  // could otherwise wrap around and describe a file of the right size.
  // Each message says which of the header's numbers disagrees with the file.
  const uint64_t room = s.size_ - sizeof(ShardHeader);
  if (h.token_count > room / h.token_bytes)
    LF_FAIL(
        "shard '{}': its header counts {} tokens of {} bytes, more than the file's {} bytes hold: truncated or "
        "corrupt",
        path, h.token_count, h.token_bytes, s.size_);
  if (h.document_count >= room / 8)
    LF_FAIL("shard '{}': its header counts {} documents, more than the file's {} bytes can index: truncated or corrupt",
            path, h.document_count, s.size_);
  if (h.file_bytes != s.size_)
    LF_FAIL("shard '{}' is {} bytes but its header gives the file size as {}: truncated or corrupt", path, s.size_,
            h.file_bytes);
  if (expected_file_bytes(h) != s.size_)
    LF_FAIL("shard '{}' is {} bytes but the {} tokens and {} documents its header counts take {}: truncated or corrupt",
            path, s.size_, h.token_count, h.document_count, expected_file_bytes(h));
  if (verify) s.verify_checksum();

  s.offsets_ =
      reinterpret_cast<const uint64_t*>(s.base_ + padded_to_8(sizeof(ShardHeader) + h.token_count * h.token_bytes));
  if (s.offsets_[0] != 0 || s.offsets_[h.document_count] != h.token_count)
    LF_FAIL("shard '{}': the document index does not cover the {} tokens", path, h.token_count);
  for (uint64_t d = 0; d < h.document_count; ++d)
    if (s.offsets_[d] > s.offsets_[d + 1]) LF_FAIL("shard '{}': document offsets decrease at document {}", path, d);
  // Readers index per-token tables with the ids (embeddings, unigram counts), and without the
  // checksum nothing else would catch a damaged id: one pass over the tokens.
  uint32_t max_id = 0;
  if (h.token_bytes == 2) {
    const uint16_t* t = s.tokens16();
    for (uint64_t i = 0; i < h.token_count; ++i) max_id = std::max<uint32_t>(max_id, t[i]);
  } else {
    const uint32_t* t = s.tokens32();
    for (uint64_t i = 0; i < h.token_count; ++i) max_id = std::max(max_id, t[i]);
  }
  if (h.token_count > 0 && max_id >= h.vocab_size)
    LF_FAIL("shard '{}' is corrupt: token id {} is outside its vocabulary of {}; re-run linformer prepare --force",
            path, max_id, h.vocab_size);
  return s;
}

void Shard::verify_checksum() const {
  const uint32_t body = crc32_update(0, base_ + sizeof(ShardHeader), size_ - sizeof(ShardHeader));
  const uint32_t computed = static_cast<uint32_t>(
      crc32_combine(header_crc(header_), body, static_cast<z_off_t>(size_ - sizeof(ShardHeader))));
  if (computed != header_.checksum)
    LF_FAIL(
        "shard '{}' is corrupt: checksum {:08x} does not match the header's {:08x}; re-run linformer prepare "
        "--force",
        path_, computed, header_.checksum);
}

Shard::Shard(Shard&& o) noexcept { *this = std::move(o); }

Shard& Shard::operator=(Shard&& o) noexcept {
  if (this != &o) {
    if (base_) ::munmap(const_cast<unsigned char*>(base_), size_);
    path_ = std::move(o.path_);
    base_ = o.base_;
    size_ = o.size_;
    header_ = o.header_;
    offsets_ = o.offsets_;
    o.base_ = nullptr;
    o.offsets_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

Shard::~Shard() {
  if (base_) ::munmap(const_cast<unsigned char*>(base_), size_);
}

void Shard::copy(uint64_t begin, uint64_t end, int32_t* out) const {
  LF_CHECK(begin <= end && end <= header_.token_count, "shard '{}': tokens [{}, {}) out of range [0, {})", path_, begin,
           end, header_.token_count);
  if (header_.token_bytes == 2) {
    const uint16_t* t = tokens16();
    for (uint64_t i = begin; i < end; ++i) *out++ = t[i];
  } else {
    const uint32_t* t = tokens32();
    for (uint64_t i = begin; i < end; ++i) *out++ = static_cast<int32_t>(t[i]);
  }
}

}  // namespace linformer::data

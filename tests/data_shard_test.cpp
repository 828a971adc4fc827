// Token shards: round trip in both widths, atomic writing, and corruption detection.

#include "linformer/core/check.h"
#include "linformer/core/fs.h"
#include "linformer/data/shard.h"
#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <filesystem>

namespace linformer::data {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
namespace fs = std::filesystem;

const std::vector<std::vector<int32_t>> kDocs = {{5, 6, 2, 7, 2}, {}, {299, 2}, {8, 9, 10, 11, 2, 12, 2}};

std::string write_shard(const TempDir& dir, const std::string& name, int vocab_size,
                        const std::vector<std::vector<int32_t>>& docs = kDocs) {
  const std::string path = (dir.path() / name).string();
  ShardWriter w(path, vocab_size, 0xABCDEF);
  for (const auto& d : docs) w.add_document(d);
  w.finish();
  return path;
}

std::string open_error(const std::string& path) {
  try {
    Shard::open(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Shard, RoundTripInBothWidths) {
  TempDir dir;
  for (int vocab : {300, 65536, 70000}) {
    std::vector<std::vector<int32_t>> docs = kDocs;
    if (vocab > 65536) docs.push_back({69999, 65536, 2});
    const Shard s = Shard::open(write_shard(dir, "s" + std::to_string(vocab) + ".bin", vocab, docs));
    EXPECT_EQ(s.token_bytes(), vocab <= 65536 ? 2u : 4u);
    EXPECT_EQ(s.vocab_size(), vocab);
    EXPECT_EQ(s.vocab_hash(), 0xABCDEFu);
    ASSERT_EQ(s.document_count(), docs.size());
    uint64_t total = 0;
    for (size_t d = 0; d < docs.size(); ++d) {
      const uint64_t b = s.document_begin(d), e = s.document_end(d);
      ASSERT_EQ(e - b, docs[d].size()) << "document " << d;
      std::vector<int32_t> got(e - b);
      s.copy(b, e, got.data());
      EXPECT_EQ(got, docs[d]);
      for (uint64_t i = b; i < e; ++i) EXPECT_EQ(s.token(i), docs[d][i - b]);
      total += docs[d].size();
    }
    EXPECT_EQ(s.token_count(), total);
    // Header + tokens padded to 8 + (D + 1) offsets.
    const uint64_t expected = (64 + total * s.token_bytes() + 7) / 8 * 8 + 8 * (docs.size() + 1);
    EXPECT_EQ(fs::file_size(s.path()), expected);
  }
}

TEST(Shard, EmptyShardIsValid) {
  TempDir dir;
  const Shard s = Shard::open(write_shard(dir, "empty.bin", 100, {}));
  EXPECT_EQ(s.token_count(), 0u);
  EXPECT_EQ(s.document_count(), 0u);
}

TEST(Shard, NothingVisibleUntilFinished) {
  TempDir dir;
  const std::string path = (dir.path() / "s.bin").string();
  {
    ShardWriter w(path, 300, 1);
    w.add_document({5, 6, 2});
    EXPECT_FALSE(fs::exists(path));
  }  // abandoned: as if prepare failed half-way
  EXPECT_TRUE(fs::is_empty(dir.path())) << "the temporary file was left behind";
  ShardWriter w(path, 300, 1);
  EXPECT_THROW(w.add_document({5, 300}), Error);  // id outside the vocabulary
}

TEST(Shard, AnyFlippedByteIsDetected) {
  TempDir dir;
  const std::string path = write_shard(dir, "s.bin", 300);
  const std::string good = read_file(path);
  // Every byte, padding included: the checksum covers the whole file.
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    const std::string corrupt = dir.write("corrupt.bin", bad);
    EXPECT_THAT(open_error(corrupt), HasSubstr("corrupt.bin")) << "byte " << i;
    EXPECT_NE(open_error(corrupt), "no error") << "byte " << i;
  }
}

TEST(Shard, ClearErrorsForEachKindOfDamage) {
  TempDir dir;
  const std::string good = read_file(write_shard(dir, "s.bin", 300));
  std::string tokens_flipped = good;
  tokens_flipped[64] ^= 0x10;
  EXPECT_THAT(open_error(dir.write("a.bin", tokens_flipped)), HasSubstr("is corrupt: checksum"));
  EXPECT_THAT(open_error(dir.write("b.bin", good.substr(0, good.size() - 8))), HasSubstr("truncated or corrupt"));
  EXPECT_THAT(open_error(dir.write("c.bin", "short")), HasSubstr("too short"));
  // A forged header: each message names the number that disagrees with the file (one once said
  // "is 4805912 bytes but its header describes 4805912").
  const auto forged = [&](size_t offset, uint64_t value) {
    std::string bytes = good;
    std::memcpy(&bytes[offset], &value, sizeof value);
    return open_error(dir.write("forged.bin", bytes));
  };
  ShardHeader h;
  std::memcpy(&h, good.data(), sizeof h);
  const size_t size = good.size();
  EXPECT_THAT(forged(offsetof(ShardHeader, file_bytes), size + 8),
              HasSubstr("is " + std::to_string(size) + " bytes but its header gives the file size as " +
                        std::to_string(size + 8)));
  EXPECT_THAT(forged(offsetof(ShardHeader, token_count), uint64_t{1} << 62),
              HasSubstr("its header counts 4611686018427387904 tokens of 2 bytes, more than the file's " +
                        std::to_string(size) + " bytes hold"));
  EXPECT_THAT(forged(offsetof(ShardHeader, document_count), size),
              HasSubstr("its header counts " + std::to_string(size) + " documents, more than the file's"));
  EXPECT_THAT(
      forged(offsetof(ShardHeader, token_count), h.token_count - 8),
      HasSubstr("but the " + std::to_string(h.token_count - 8) + " tokens and " + std::to_string(h.document_count) +
                " documents its header counts take " + std::to_string(size - 16)));
  std::string magic = good;
  magic[0] = 'X';
  EXPECT_THAT(open_error(dir.write("d.bin", magic)), HasSubstr("not a token shard"));
  std::string version = good;
  version[8] = 2;
  EXPECT_THAT(open_error(dir.write("e.bin", version)), HasSubstr("format version 2, this build reads version 1"));
  EXPECT_THAT(open_error((dir.path() / "missing.bin").string()), HasSubstr("cannot open shard"));
  // Without verification a token flip goes unnoticed until verify_checksum().
  const Shard s = Shard::open(dir.path() / "a.bin", /*verify_checksum=*/false);
  EXPECT_THROW(s.verify_checksum(), Error);
}

}  // namespace
}  // namespace linformer::data

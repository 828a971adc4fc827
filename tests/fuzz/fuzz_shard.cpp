// Fuzz target: token shards. data::Shard::open on one file, without and with the checksum,
// then everything a reader of a shard does: every document's tokens, and the unigram model
// (prepare and eval build it from a shard opened without the checksum).
//
// Input: the shard file. Invariants of an opened shard (shard.h): the header describes the
// file (T tokens of its width fit in it), documents tile [0, T) in order, and every token id
// is below the vocabulary size.

#include "fuzz_support.h"
#include "linformer/data/shard.h"
#include "linformer/data/unigram.h"

#include <vector>

using namespace linformer;

namespace {

void read_everything(const data::Shard& shard, size_t file_bytes) {
  const uint64_t T = shard.token_count();
  FUZZ_ASSERT(T <= file_bytes / shard.token_bytes(), "{} tokens of {} bytes in a file of {} bytes", T,
              shard.token_bytes(), file_bytes);
  FUZZ_ASSERT(shard.document_count() <= file_bytes / 8, "{} documents in a file of {} bytes", shard.document_count(),
              file_bytes);
  std::vector<int32_t> tokens;
  uint64_t previous_end = 0;
  for (uint64_t d = 0; d < shard.document_count(); ++d) {
    const uint64_t begin = shard.document_begin(d), end = shard.document_end(d);
    FUZZ_ASSERT(begin == previous_end && begin <= end && end <= T, "document {} is [{}, {}) of {} tokens", d, begin,
                end, T);
    previous_end = end;
    tokens.resize(end - begin);
    shard.copy(begin, end, tokens.data());
    for (uint64_t i = begin; i < end; ++i) {
      const int32_t id = shard.token(i);
      FUZZ_ASSERT(id == tokens[i - begin], "token {} reads {} and copies {}", i, id, tokens[i - begin]);
      FUZZ_ASSERT(id >= 0 && id < shard.vocab_size(), "token {} is {}, outside the vocabulary of {}", i, id,
                  shard.vocab_size());
    }
  }
  FUZZ_ASSERT(previous_end == T, "the documents cover {} of {} tokens", previous_end, T);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch().file("shard.bin");
  fuzz::write_bytes(path, fuzz::as_text(data, size));
  fuzz::accepts([&] {
    const data::Shard shard = data::Shard::open(path, /*verify_checksum=*/false);
    read_everything(shard, size);
    // The unigram model holds V doubles; open_prepared ties a shard's V to spm.model's, so a
    // header's V alone never sizes it in the program.
    if (shard.vocab_size() > (1 << 20)) return;
    const data::UnigramModel unigram(shard);
    unigram.perplexity(shard);
  });
  fuzz::accepts([&] { read_everything(data::Shard::open(path, /*verify_checksum=*/true), size); });
  return 0;
}

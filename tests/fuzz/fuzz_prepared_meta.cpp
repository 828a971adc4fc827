// Fuzz target: prepared data's meta.json. At start-up the target writes a complete prepared
// directory (a SentencePiece model trained on made-up sentences, three small shards); each
// input replaces its meta.json, then data::open_prepared runs on it.
//
// Input: meta.json. LINFORMER_FUZZ_EXPORT=DIR writes the directory's own meta.json to DIR (how
// seeds/meta.json was made).

#include "../data_test_corpus.h"
#include "fuzz_support.h"
#include "linformer/data/prepare.h"
#include "linformer/data/prepared.h"
#include "linformer/data/tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

using namespace linformer;

namespace {

struct Prepared {
  std::string dir = fuzz::scratch().file("prepared");

  Prepared() {
    std::filesystem::create_directories(dir);
    data::TokenizerTrainOptions o;
    o.vocab_size = 64;
    const data::Tokenizer tokenizer =
        data::Tokenizer::from_serialized(data::train_tokenizer(testing::synthetic_sentences(200, 1), o));
    fuzz::write_bytes(dir + "/spm.model", tokenizer.serialized());
    for (const char* split : {"train", "valid", "test"}) {
      data::ShardWriter shard(dir + "/" + split + ".bin", tokenizer.vocab_size(), tokenizer.hash());
      shard.add_document({1, 7, 8, 9, 2});
      shard.finish();
    }
    const nlohmann::json meta = {
        {"format", "linformer-prepared"},
        {"version", data::kPreparedVersion},
        {"tokenizer", {{"file", "spm.model"}, {"hash", fmt::format("{:016x}", tokenizer.hash())}}}};
    if (const char* to = std::getenv("LINFORMER_FUZZ_EXPORT"))
      fuzz::write_bytes((std::filesystem::path(to) / "meta.json").string(), meta.dump(2) + "\n");
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Prepared prepared;
  fuzz::write_bytes(prepared.dir + "/meta.json", fuzz::as_text(data, size));
  fuzz::accepts([&] { data::open_prepared(prepared.dir); });
  return 0;
}

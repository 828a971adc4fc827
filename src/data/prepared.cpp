#include "linformer/data/prepared.h"

#include "linformer/core/check.h"
#include "linformer/core/fs.h"
#include "linformer/data/prepare.h"

#include <filesystem>

namespace linformer::data {

PreparedData open_prepared(const std::string& dir, bool verify_checksums) {
  namespace fs = std::filesystem;
  return with_context(fmt::format("prepared data '{}'", dir), [&] {
    const std::string meta_path = (fs::path(dir) / "meta.json").string();
    if (!fs::exists(meta_path)) LF_FAIL("no meta.json: run `linformer prepare` with this recipe first");
    nlohmann::json meta;
    try {
      meta = nlohmann::json::parse(read_file(meta_path));
    } catch (const nlohmann::json::exception& e) {
      LF_FAIL("meta.json is not valid JSON: {}", e.what());
    }
    // The fields read here, of any type or missing: a damaged meta.json is bad input like any other.
    auto field = [&](const char* pointer) {
      const nlohmann::json::json_pointer p(pointer);
      return meta.contains(p) ? meta.at(p) : nlohmann::json();
    };
    if (field("/format") != "linformer-prepared" || field("/version") != kPreparedVersion)
      LF_FAIL("meta.json is not version {} prepared data: run `linformer prepare --force`", kPreparedVersion);
    Tokenizer tokenizer = Tokenizer::load((fs::path(dir) / "spm.model").string());
    const std::string hash = fmt::format("{:016x}", tokenizer.hash());
    if (field("/tokenizer/hash") != hash) LF_FAIL("spm.model does not match meta.json");
    auto open = [&](Split s) {
      Shard shard = Shard::open((fs::path(dir) / (std::string(split_name(s)) + ".bin")).string(), verify_checksums);
      if (shard.vocab_hash() != tokenizer.hash() || shard.vocab_size() != tokenizer.vocab_size())
        LF_FAIL("{} was encoded with another vocabulary than spm.model", shard.path());
      return shard;
    };
    Shard train = open(Split::train), valid = open(Split::valid), test = open(Split::test);
    return PreparedData{
        dir, std::move(meta), std::move(tokenizer), std::move(train), std::move(valid), std::move(test)};
  });
}

}  // namespace linformer::data

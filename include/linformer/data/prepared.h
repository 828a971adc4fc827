#pragma once
// A prepared data directory opened for training: its metadata, tokenizer and shards.

#include "linformer/data/shard.h"
#include "linformer/data/split.h"
#include "linformer/data/tokenizer.h"

#include <nlohmann/json.hpp>

#include <string>

namespace linformer::data {

struct PreparedData {
  std::string dir;
  nlohmann::json meta;
  Tokenizer tokenizer;
  Shard train, valid, test;

  const Shard& shard(Split s) const { return s == Split::train ? train : s == Split::valid ? valid : test; }
};

// Opens and checks dir/meta.json, dir/spm.model and the shards (checksums, vocabulary
// hashes); the error says to run `linformer prepare` when something is missing.
PreparedData open_prepared(const std::string& dir, bool verify_checksums = true);

}  // namespace linformer::data

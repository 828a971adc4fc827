#pragma once
// SentencePiece tokenizer with the project's fixed special ids (special_tokens.h).

#include "linformer/config/recipe.h"
#include "linformer/data/special_tokens.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace linformer::data {

struct TokenizerTrainOptions {
  config::TokenizerKind kind = config::TokenizerKind::unigram;
  int vocab_size = 8000;
  int threads = 1;
  uint64_t seed = 1;
};

// Trains SentencePiece on `sentences` (consumed: each is freed once SentencePiece
// has copied it) and returns the serialized model. Throws linformer::Error with
// SentencePiece's own message, e.g. for a corpus too small for the vocabulary.
std::string train_tokenizer(std::vector<std::string>&& sentences, const TokenizerTrainOptions& options);

class Tokenizer {
 public:
  // From a .model file or its bytes. Throws if the special ids are not the fixed ones.
  static Tokenizer load(const std::string& path);
  static Tokenizer from_serialized(std::string model, const std::string& name = "tokenizer");

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  int vocab_size() const { return vocab_size_; }
  // Appends the ids of `text` to `ids`. Thread-safe.
  void encode(std::string_view text, std::vector<int>& ids) const;
  std::string decode(const std::vector<int>& ids) const;
  const std::string& piece(int id) const;
  // word_starts()[id] = 1 when the piece begins a word (starts with "▁"); (V).
  const std::vector<uint8_t>& word_starts() const { return word_starts_; }
  // The model's bytes and their hash (the shards record it, so a shard is never read with another vocabulary).
  const std::string& serialized() const { return serialized_; }
  uint64_t hash() const { return hash_; }

 private:
  Tokenizer();

  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string serialized_;
  uint64_t hash_ = 0;
  int vocab_size_ = 0;
  std::vector<uint8_t> word_starts_;
};

}  // namespace linformer::data

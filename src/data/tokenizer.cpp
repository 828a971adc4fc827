#include "linformer/data/tokenizer.h"

#include "linformer/core/check.h"
#include "linformer/core/fs.h"
#include "linformer/data/hash.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <spdlog/spdlog.h>

#include <unordered_map>

// Exported by libsentencepiece but not declared in its public headers: the
// threshold of its own stderr logging (0 info, 1 warning, 2 error).
namespace sentencepiece::logging {
void SetMinLogLevel(int v);
}

namespace linformer::data {

namespace {

// Longer than the longest Brown paragraph (9.7 KB); SentencePiece skips longer ones.
constexpr int kMaxSentenceBytes = 1 << 16;

// Hands the sentences to SentencePiece one by one, freeing each after it is copied.
class VectorIterator : public sentencepiece::SentenceIterator {
 public:
  explicit VectorIterator(std::vector<std::string>& s) : s_(s) {}
  bool done() const override { return i_ >= s_.size(); }
  void Next() override { std::string().swap(s_[i_++]); }
  const std::string& value() const override { return s_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::vector<std::string>& s_;
  size_t i_ = 0;
};

}  // namespace

std::string train_tokenizer(std::vector<std::string>&& sentences, const TokenizerTrainOptions& o) {
  LF_CHECK(!sentences.empty(), "no sentences to train the tokenizer on");
  const size_t count = sentences.size();
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", o.kind == config::TokenizerKind::bpe ? "bpe" : "unigram"},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"character_coverage", "1.0"},
      {"max_sentence_length", std::to_string(kMaxSentenceBytes)},
      {"input_sentence_size", "0"},  // the sample is already drawn
      {"num_threads", std::to_string(std::max(1, o.threads))},
      {"pad_id", std::to_string(kPadId)},
      {"bos_id", std::to_string(kBosId)},
      {"eos_id", std::to_string(kEosId)},
      {"unk_id", std::to_string(kUnkId)},
      {"pad_piece", kSpecialPieces[kPadId]},
      {"bos_piece", kSpecialPieces[kBosId]},
      {"eos_piece", kSpecialPieces[kEosId]},
      {"unk_piece", kSpecialPieces[kUnkId]},
      {"user_defined_symbols", kSpecialPieces[kMaskId]},
  };
  sentencepiece::SetRandomGeneratorSeed(static_cast<unsigned>(o.seed));
  sentencepiece::logging::SetMinLogLevel(spdlog::get_level() <= spdlog::level::debug ? 0 : 2);
  VectorIterator it(sentences);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &it, &model);
  if (!status.ok())
    LF_FAIL(
        "training a {} tokenizer with {} pieces on {} sentences failed: {} (use a smaller data.vocab_size "
        "or a larger corpus)",
        args.at("model_type"), o.vocab_size, count, status.ToString());
  return model;
}

Tokenizer::Tokenizer() : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& path) {
  return with_context(fmt::format("tokenizer '{}'", path), [&] { return from_serialized(read_file(path), path); });
}

Tokenizer Tokenizer::from_serialized(std::string model, const std::string& name) {
  Tokenizer t;
  const auto status = t.sp_->LoadFromSerializedProto(model);
  if (!status.ok()) LF_FAIL("{} is not a SentencePiece model: {}", name, status.ToString());
  t.vocab_size_ = t.sp_->GetPieceSize();
  LF_CHECK(t.vocab_size_ > kFirstOrdinaryId, "{} has only {} pieces", name, t.vocab_size_);
  for (int id = 0; id < kFirstOrdinaryId; ++id)
    if (t.sp_->IdToPiece(id) != kSpecialPieces[id])
      LF_FAIL(
          "{}: id {} is '{}' but must be '{}' (train with pad_id=0, bos_id=1, eos_id=2, unk_id=3 and "
          "user_defined_symbols=<mask>)",
          name, id, t.sp_->IdToPiece(id), kSpecialPieces[id]);
  t.word_starts_.resize(static_cast<size_t>(t.vocab_size_));
  for (int id = 0; id < t.vocab_size_; ++id)
    t.word_starts_[static_cast<size_t>(id)] = t.sp_->IdToPiece(id).rfind("\xE2\x96\x81", 0) == 0;
  t.hash_ = hash64(model);
  t.serialized_ = std::move(model);
  return t;
}

void Tokenizer::encode(std::string_view text, std::vector<int>& ids) const {
  thread_local std::vector<int> piece_ids;
  const auto status = sp_->Encode(text, &piece_ids);
  LF_CHECK(status.ok(), "SentencePiece cannot encode a text of {} bytes: {}", text.size(), status.ToString());
  ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::string text;
  const auto status = sp_->Decode(ids, &text);
  LF_CHECK(status.ok(), "SentencePiece cannot decode {} ids: {}", ids.size(), status.ToString());
  return text;
}

const std::string& Tokenizer::piece(int id) const {
  LF_CHECK(id >= 0 && id < vocab_size_, "token id {} outside the vocabulary [0, {})", id, vocab_size_);
  return sp_->IdToPiece(id);
}

}  // namespace linformer::data

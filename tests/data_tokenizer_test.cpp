// SentencePiece training and loading with the fixed special ids.

#include "data_test_corpus.h"
#include "linformer/core/check.h"
#include "linformer/core/fs.h"
#include "linformer/data/tokenizer.h"
#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>

namespace linformer::data {
namespace {

using ::testing::HasSubstr;

using testing::synthetic_sentences;

void expect_special_ids(const Tokenizer& t) {
  EXPECT_EQ(t.piece(0), "<pad>");
  EXPECT_EQ(t.piece(1), "<s>");
  EXPECT_EQ(t.piece(2), "</s>");
  EXPECT_EQ(t.piece(3), "<unk>");
  EXPECT_EQ(t.piece(4), "<mask>");
}

void expect_round_trip(const Tokenizer& t, const std::vector<std::string>& sentences) {
  for (const auto& s : sentences) {
    std::vector<int> ids;
    t.encode(s, ids);
    ASSERT_FALSE(ids.empty());
    for (int id : ids) {
      EXPECT_GE(id, kFirstOrdinaryId) << s;  // no unknowns: every character was in the training data
      EXPECT_LT(id, t.vocab_size());
    }
    EXPECT_EQ(t.decode(ids), s);
    EXPECT_EQ(t.word_starts()[static_cast<size_t>(ids[0])], 1) << "the first piece starts a word: " << t.piece(ids[0]);
  }
}

TEST(Tokenizer, TrainsUnigramAndBpeWithFixedSpecialIds) {
  const auto held_out = synthetic_sentences(20, 99);
  uint64_t hashes[2];
  int i = 0;
  for (auto kind : {config::TokenizerKind::unigram, config::TokenizerKind::bpe}) {
    TokenizerTrainOptions o;
    o.kind = kind;
    o.vocab_size = 200;
    const Tokenizer t = Tokenizer::from_serialized(train_tokenizer(synthetic_sentences(1500, 1), o));
    EXPECT_EQ(t.vocab_size(), 200);
    expect_special_ids(t);
    expect_round_trip(t, held_out);
    for (int id = 0; id < kFirstOrdinaryId; ++id) EXPECT_EQ(t.word_starts()[static_cast<size_t>(id)], 0);
    hashes[i++] = t.hash();
  }
  EXPECT_NE(hashes[0], hashes[1]);
}

TEST(Tokenizer, TrainingIsDeterministic) {
  TokenizerTrainOptions o;
  o.vocab_size = 150;
  EXPECT_EQ(train_tokenizer(synthetic_sentences(500, 3), o), train_tokenizer(synthetic_sentences(500, 3), o));
}

TEST(Tokenizer, SavedModelLoadsBack) {
  testing::TempDir dir;
  TokenizerTrainOptions o;
  o.vocab_size = 150;
  const std::string model = train_tokenizer(synthetic_sentences(500, 3), o);
  const std::string path = (dir.path() / "spm.model").string();
  write_file_atomic(path, model);
  const Tokenizer t = Tokenizer::load(path);
  EXPECT_EQ(t.vocab_size(), 150);
  EXPECT_EQ(t.hash(), Tokenizer::from_serialized(model).hash());
  expect_round_trip(t, synthetic_sentences(5, 7));
}

TEST(Tokenizer, CorpusTooSmallForTheVocabulary) {
  for (auto kind : {config::TokenizerKind::unigram, config::TokenizerKind::bpe}) {
    TokenizerTrainOptions o;
    o.kind = kind;
    o.vocab_size = 5000;
    try {
      train_tokenizer({"a tiny corpus.", "with two sentences."}, o);
      FAIL() << "no error for " << config::enum_name(kind);
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("5000 pieces on 2 sentences failed"));
      EXPECT_THAT(e.what(), HasSubstr("Vocabulary size"));  // SentencePiece's own explanation
    }
  }
}

TEST(Tokenizer, ModelWithOtherSpecialIdsIsRejected) {
  testing::TempDir dir;
  auto sentences = synthetic_sentences(300, 5);
  std::string text;
  for (const auto& s : sentences) text += s + "\n";
  const std::string input = dir.write("in.txt", text);
  const std::string prefix = (dir.path() / "default_ids").string();
  // SentencePiece's defaults: <unk>=0, <s>=1, </s>=2, no <pad>.
  const auto status = sentencepiece::SentencePieceTrainer::Train("--input=" + input + " --model_prefix=" + prefix +
                                                                 " --vocab_size=100 --minloglevel=2");
  ASSERT_TRUE(status.ok()) << status.ToString();
  try {
    Tokenizer::load(prefix + ".model");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("default_ids.model"));
    EXPECT_THAT(e.what(), HasSubstr("id 0 is '<unk>' but must be '<pad>'"));
  }
  EXPECT_THROW(Tokenizer::from_serialized("not a model"), Error);
}

}  // namespace
}  // namespace linformer::data

// Labelled documents (data/labelled.h): each line encoded as pretraining encodes a sentence and
// the document cut to max_len; labels from the training file, sorted, integers as their names;
// the batcher visits every document once per epoch, in a new order each epoch, and a state
// set from outside gives the batch the sequence would have given.

#include "data_test_corpus.h"
#include "linformer/data/labelled.h"
#include "test_util.h"

#include <gmock/gmock.h>

#include <functional>
#include <set>

namespace linformer::data {
namespace {

using ::testing::HasSubstr;

const Tokenizer& tokenizer() {
  static const Tokenizer t = [] {
    TokenizerTrainOptions o;
    o.vocab_size = 200;
    return Tokenizer::from_serialized(train_tokenizer(testing::synthetic_sentences(1500, 1), o));
  }();
  return t;
}

TEST(Labelled, DocumentsAreSentencesBetweenBosAndEosCutToMaxLen) {
  testing::TempDir dir;
  const auto s = testing::synthetic_sentences(3, 5);
  const std::string path = dir.write("a.jsonl", "{\"text\": \"" + s[0] + "\\n\\n" + s[1] + "\", \"label\": 7}\n" +
                                                    "{\"text\": \"" + s[2] + "\", \"label\": 12}\n");
  const LabelledSet set = read_labelled_file(path, tokenizer(), {"text", "label", 512});
  ASSERT_EQ(set.size(), 2);
  EXPECT_EQ(set.labels, (std::vector<std::string>{"12", "7"}));  // sorted names
  EXPECT_EQ(set.label_ids, (std::vector<int32_t>{1, 0}));
  std::vector<int> expected{kBosId};
  tokenizer().encode(s[0], expected);
  expected.push_back(kEosId);
  tokenizer().encode(s[1], expected);
  expected.push_back(kEosId);
  EXPECT_EQ(std::vector<int>(set.tokens.begin(), set.tokens.begin() + set.offsets[1]), expected);
  EXPECT_EQ(set.truncated, 0);

  const LabelledSet cut = read_labelled_file(path, tokenizer(), {"text", "label", 5});
  EXPECT_EQ(cut.offsets[1], 5);
  EXPECT_EQ(std::vector<int>(cut.tokens.begin(), cut.tokens.begin() + 5),
            std::vector<int>(expected.begin(), expected.begin() + 5));
  EXPECT_EQ(cut.truncated, 2);
}

TEST(Labelled, BatchesVisitEveryDocumentOncePerEpochAndResumeAnywhere) {
  testing::TempDir dir;
  std::string lines;
  const auto s = testing::synthetic_sentences(23, 9);
  for (int d = 0; d < 23; ++d) lines += "{\"text\": \"" + s[d] + "\", \"label\": \"" + (d % 3 ? "a" : "b") + "\"}\n";
  const LabelledSet set = read_labelled_file(dir.write("a.jsonl", lines), tokenizer(), {"text", "label", 512});
  LabelledBatcher batches(set, 5, true, 42);
  ASSERT_EQ(batches.batches_per_epoch(), 5);  // 5 + 5 + 5 + 5 + 3
  std::vector<std::vector<int64_t>> orders(2);
  std::vector<LabelledBatch> sequence;
  for (int epoch = 0; epoch < 2; ++epoch)
    for (int b = 0; b < 5; ++b) {
      LabelledBatch batch;
      batches.next(batch);
      EXPECT_EQ(batch.rows, b < 4 ? 5 : 3);
      for (int64_t r = 0; r < batch.rows; ++r) {
        const int64_t d = batch.documents[r];
        EXPECT_EQ(batch.labels[r], set.label_ids[d]);
        EXPECT_EQ(batch.lengths[r], set.offsets[d + 1] - set.offsets[d]);
        for (int64_t t = batch.lengths[r]; t < batch.seq_len; ++t) EXPECT_EQ(batch.ids[r * batch.seq_len + t], kPadId);
        orders[epoch].push_back(d);
      }
      sequence.push_back(batch);
    }
  for (const auto& order : orders) EXPECT_EQ(std::set<int64_t>(order.begin(), order.end()).size(), 23u);
  EXPECT_NE(orders[0], orders[1]) << "the same order in two epochs";
  LabelledBatcher resumed(set, 5, true, 42);
  resumed.set_state({1, 2});
  LabelledBatch batch;
  resumed.next(batch);
  EXPECT_EQ(batch.documents, sequence[7].documents);
  EXPECT_EQ(batch.ids, sequence[7].ids);
  EXPECT_THROW(resumed.set_state({0, 5}), Error);
}

TEST(Labelled, AFolderPerLabelGivesAFileADocument) {
  testing::TempDir dir;
  const auto s = testing::synthetic_sentences(3, 5);
  dir.write("set/pos/1.txt", s[0] + "\n");
  dir.write("set/pos/2.txt", s[1] + "\n");
  dir.write("set/neg/1.txt", s[2] + "\n");
  dir.write("set/.hidden/x.txt", "ignored\n");
  const LabelledSet set = read_labelled_file((dir.path() / "set").string(), tokenizer(), {"text", "label", 512});
  EXPECT_EQ(set.labels, (std::vector<std::string>{"neg", "pos"}));
  EXPECT_EQ(set.label_ids, (std::vector<int32_t>{0, 1, 1}));  // folders and files in name order
  std::vector<int> first{kBosId};
  tokenizer().encode(s[2], first);
  first.push_back(kEosId);
  EXPECT_EQ(std::vector<int>(set.tokens.begin(), set.tokens.begin() + set.offsets[1]), first);
  dir.write("flat/a.txt", "text\n");
  EXPECT_THROW(read_labelled_file((dir.path() / "flat").string(), tokenizer(), {"text", "label", 512}), Error);
}

TEST(Labelled, LabelsOutsideTheTrainingFilesAreRefused) {
  testing::TempDir dir;
  const std::string path = dir.write("v.jsonl", "{\"text\": \"kalo\", \"label\": \"c\"}\n");
  try {
    read_labelled_file(path, tokenizer(), {"text", "label", 512}, {"a", "b"});
    FAIL() << "accepted an unknown label";
  } catch (const Error& e) {
    // The list may be the recipe's (finetune.labels): the message blames no file for it.
    EXPECT_THAT(e.what(), HasSubstr(path + ": document 1 has the label 'c', not one of the run's labels (a, b: "
                                           "finetune.labels, or the training file's when finetune.labels is empty)"));
  }
}

// Empty texts were trained on (a document of <s> alone) and `classify` labelled an empty file
// (issue 48, item 16): each is refused naming the file (and line).
TEST(Labelled, EmptyTextsAreRefusedNamingFileAndLine) {
  testing::TempDir dir;
  const LabelledFileOptions options{"text", "label", 512};
  const auto error_of = [&](const std::function<void()>& read) -> std::string {
    try {
      read();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string jsonl = dir.write("t.jsonl",
                                      "{\"text\": \"ka lo\", \"label\": \"a\"}\n"
                                      "{\"text\": \"\", \"label\": \"b\"}\n");
  EXPECT_THAT(error_of([&] { read_labelled_file(jsonl, tokenizer(), options); }),
              HasSubstr(jsonl + ":2: the text (field \"text\") is empty"));
  const std::string blank = dir.write("blank.jsonl", "{\"text\": \" \\n \", \"label\": \"b\"}\n");
  EXPECT_THAT(error_of([&] {
                read_labelled_file(blank, tokenizer(), options, {"a", "b"});
              }),
              HasSubstr(blank + ":1: the text (field \"text\") is empty"));
  dir.write("folders/a/1.txt", "ka lo\n");
  const std::string empty_file = dir.write("folders/b/2.txt", "\n\n");
  EXPECT_THAT(error_of([&] { read_labelled_file((dir.path() / "folders").string(), tokenizer(), options); }),
              HasSubstr(empty_file + ": the document is empty"));
  std::vector<std::string> sources;
  const std::string nothing = dir.write("nothing.txt", "");
  EXPECT_THAT(error_of([&] { read_documents_to_classify({nothing}, tokenizer(), options, sources); }),
              HasSubstr(nothing + ": the document is empty"));
  EXPECT_THAT(error_of([&] { read_documents_to_classify({jsonl}, tokenizer(), options, sources); }),
              HasSubstr(jsonl + ":2: the text (field \"text\") is empty"));
  EXPECT_THAT(
      error_of([&] { read_documents_to_classify({dir.write("none.jsonl", "\n")}, tokenizer(), options, sources); }),
      HasSubstr("no documents to classify"));
}

}  // namespace
}  // namespace linformer::data

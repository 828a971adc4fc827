// Corpus readers: formats, gzip, directories and globs, normalisation, and the errors.

#include "linformer/core/check.h"
#include "linformer/core/fs.h"
#include "linformer/data/corpus.h"
#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <unistd.h>

#include <filesystem>

namespace linformer::data {
namespace {

using config::CorpusFormat;
using testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kFixtures = std::string(LINFORMER_SOURCE_DIR) + "/tests/fixtures/corpus/";

std::vector<std::vector<std::string>> read_all(CorpusOptions o, CorpusStats* stats = nullptr) {
  CorpusReader reader(std::move(o));
  std::vector<std::vector<std::string>> docs;
  Document d;
  while (reader.next(d)) docs.push_back(d.sentences);
  if (stats) *stats = reader.stats();
  return docs;
}

CorpusOptions inputs(std::vector<std::string> paths) {
  CorpusOptions o;
  o.inputs = std::move(paths);
  return o;
}

std::string gzip_file(const TempDir& dir, const std::string& name, const std::string& contents) {
  const std::string path = (dir.path() / name).string();
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, contents.data(), static_cast<unsigned>(contents.size()));
  gzclose(f);
  return path;
}

std::string error_of(CorpusOptions o) {
  try {
    read_all(std::move(o));
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Corpus, PlainTextSplitsOnBlankLinesAndFileEnds) {
  CorpusStats stats;
  const auto docs = read_all(inputs({kFixtures + "mixed.txt"}), &stats);
  EXPECT_THAT(docs, ElementsAre(ElementsAre("First paragraph of doc one.", "Second line of doc one."),
                                ElementsAre("Doc two, caf\xEF\xBF\xBD in Latin-1."),
                                ElementsAre("Doc three has no newline at the end")));
  EXPECT_EQ(stats.invalid_utf8, 1);
  EXPECT_EQ(stats.documents, 3);
  EXPECT_EQ(stats.sentences, 4);
  EXPECT_EQ(stats.files, 1);
}

TEST(Corpus, DocumentPerLine) {
  CorpusOptions o = inputs({kFixtures + "mixed.txt"});
  o.document_per_line = true;
  EXPECT_EQ(read_all(o).size(), 4u);
}

TEST(Corpus, EachFileEndsADocument) {
  TempDir dir;
  dir.write("d/a.txt", "a1\na2\n");
  dir.write("d/b.txt", "b1\nb2");
  EXPECT_THAT(read_all(inputs({(dir.path() / "d").string()})),
              ElementsAre(ElementsAre("a1", "a2"), ElementsAre("b1", "b2")));
}

TEST(Corpus, WikiExtractorDocs) {
  EXPECT_THAT(read_all(inputs({kFixtures + "wiki.txt"})),
              ElementsAre(ElementsAre("Anarchism", "Anarchism is a political philosophy.",
                                      "It is sceptical of authority."),
                          ElementsAre("Autism", "Autism is a neurodevelopmental condition.")));
}

TEST(Corpus, JsonLinesSplitTextIntoSentencesAndSkipEmptyDocuments) {
  EXPECT_THAT(read_all(inputs({kFixtures + "docs.jsonl"})),
              ElementsAre(ElementsAre("Hello world.", "Second paragraph.", "Third one."),
                          ElementsAre("Only one line"), ElementsAre("caf\xC3\xA9 \xE2\x96\x81 done")));
}

TEST(Corpus, JsonLinesOtherField) {
  TempDir dir;
  CorpusOptions o = inputs({dir.write("c.jsonl", "{\"body\": \"x y\"}\n")});
  o.json_text_field = "body";
  EXPECT_THAT(read_all(o), ElementsAre(ElementsAre("x y")));
}

TEST(Corpus, FormatIsDetectedPerFileFromContent) {
  TempDir dir;
  dir.write("c/1.data", read_file(kFixtures + "docs.jsonl"));
  dir.write("c/2.data", read_file(kFixtures + "wiki.txt"));
  dir.write("c/3.data", "\n\nplain one\nplain two\n");
  const auto files = list_corpus_files({(dir.path() / "c").string()}, CorpusFormat::automatic);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].format, CorpusFormat::jsonl);
  EXPECT_EQ(files[1].format, CorpusFormat::wikiextractor);
  EXPECT_EQ(files[2].format, CorpusFormat::text);
  EXPECT_EQ(read_all(inputs({(dir.path() / "c").string()})).size(), 3u + 2u + 1u);
}

TEST(Corpus, ExplicitFormatOverridesDetection) {
  CorpusOptions o = inputs({kFixtures + "wiki.txt"});
  o.format = CorpusFormat::text;  // then the <doc> lines are ordinary text
  const auto docs = read_all(o);
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0][0].substr(0, 8), "<doc id=");
}

TEST(Corpus, GzipFilesReadLikeTheirContents) {
  TempDir dir;
  const auto plain_docs = read_all(inputs({kFixtures + "mixed.txt"}));
  const auto json_docs = read_all(inputs({kFixtures + "docs.jsonl"}));
  EXPECT_EQ(read_all(inputs({gzip_file(dir, "m.txt.gz", read_file(kFixtures + "mixed.txt"))})), plain_docs);
  EXPECT_EQ(read_all(inputs({gzip_file(dir, "d.jsonl.gz", read_file(kFixtures + "docs.jsonl"))})), json_docs);
  // Detected from content too, whatever the name.
  EXPECT_EQ(read_all(inputs({gzip_file(dir, "d.gz", read_file(kFixtures + "docs.jsonl"))})), json_docs);
}

TEST(Corpus, DirectoriesAreRecursiveSortedAndSkipHiddenFiles) {
  TempDir dir;
  dir.write("c/b.txt", "B");
  dir.write("c/a/2.txt", "A2");
  dir.write("c/a/1.txt", "A1");
  dir.write("c/.complete", "hidden");
  dir.write("c/.git/x.txt", "hidden");
  EXPECT_THAT(read_all(inputs({(dir.path() / "c").string()})),
              ElementsAre(ElementsAre("A1"), ElementsAre("A2"), ElementsAre("B")));
}

TEST(Corpus, GlobPatterns) {
  TempDir dir;
  dir.write("c/x2.txt", "two");
  dir.write("c/x1.txt", "one");
  dir.write("c/y.md", "not matched");
  EXPECT_THAT(read_all(inputs({(dir.path() / "c" / "x*.txt").string()})),
              ElementsAre(ElementsAre("one"), ElementsAre("two")));
  EXPECT_THAT(error_of(inputs({(dir.path() / "c" / "z*.txt").string()})), HasSubstr("matches no files"));
}

TEST(Corpus, LongLinesCrossChunkBoundaries) {
  TempDir dir;
  const std::string long_line(700000, 'x');  // longer than the reader's 256 KiB chunks
  const auto docs = read_all(inputs({dir.write("l.txt", "a\r\n" + long_line + "\r\n\r\nb")}));
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0][1], long_line);
  EXPECT_EQ(docs[1][0], "b");
}

TEST(CorpusErrors, MissingFileOrDirectory) {
  EXPECT_THAT(error_of(inputs({"/no/such/corpus.txt"})), HasSubstr("'/no/such/corpus.txt' does not exist"));
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "empty");
  EXPECT_THAT(error_of(inputs({(dir.path() / "empty").string()})), HasSubstr("contains no files"));
}

TEST(CorpusErrors, UnreadableFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  TempDir dir;
  const std::string path = dir.write("secret.txt", "x");
  std::filesystem::permissions(path, std::filesystem::perms::none);
  EXPECT_THAT(error_of(inputs({path})), HasSubstr("secret.txt"));
}

TEST(CorpusErrors, JsonLineWithoutTheFieldNamesFileAndLine) {
  TempDir dir;
  const std::string path = dir.write("c.jsonl", "{\"text\": \"ok\"}\n{\"title\": \"no text\"}\n");
  EXPECT_THAT(error_of(inputs({path})), HasSubstr(path + ":2: JSON line has no \"text\" field"));
  const std::string bad = dir.write("bad.jsonl", "{\"text\": \"ok\"}\n\n{\"text\": \"unterminated}\n");
  EXPECT_THAT(error_of(inputs({bad})), HasSubstr(bad + ":3: invalid JSON line"));
  const std::string number = dir.write("n.jsonl", "{\"text\": 5}\n");
  EXPECT_THAT(error_of(inputs({number})), HasSubstr(number + ":1: JSON field \"text\" is not a string"));
}

TEST(CorpusErrors, CorruptAndTruncatedGzip) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i * 7919 % 10007) + "\n";
  const std::string good = read_file(gzip_file(dir, "good.txt.gz", text));
  ASSERT_GT(good.size(), 1000u);

  std::string flipped = good;
  flipped[good.size() / 2] = static_cast<char>(flipped[good.size() / 2] ^ 0x5A);
  const std::string corrupt = dir.write("corrupt.txt.gz", flipped);
  EXPECT_THAT(error_of(inputs({corrupt})), HasSubstr(corrupt + ": corrupt gzip data"));

  const std::string truncated = dir.write("truncated.txt.gz", good.substr(0, good.size() / 2));
  EXPECT_THAT(error_of(inputs({truncated})), HasSubstr(truncated + ": corrupt gzip data"));
}

TEST(Corpus, BrownCorpusIsFiveHundredDocuments) {
  const std::string brown = std::string(LINFORMER_SOURCE_DIR) + "/data/brown/text";
  if (!std::filesystem::exists(brown)) GTEST_SKIP() << "run scripts/get_brown.sh first";
  CorpusStats stats;
  const auto docs = read_all(inputs({brown}), &stats);
  EXPECT_EQ(docs.size(), 500u);
  EXPECT_EQ(stats.files, 500);
  EXPECT_EQ(stats.sentences, 13833);  // paragraphs, as brown_to_text.py reports
  EXPECT_EQ(stats.invalid_utf8, 0);
}

}  // namespace
}  // namespace linformer::data

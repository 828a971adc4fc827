// Corpus readers: formats, gzip, directories and globs, normalisation, and the errors.

#include "linformer/core/check.h"
#include "linformer/core/fs.h"
#include "linformer/data/corpus.h"
#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <future>

namespace linformer::data {
namespace {

using config::CorpusFormat;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

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
  EXPECT_THAT(
      read_all(inputs({kFixtures + "wiki.txt"})),
      ElementsAre(ElementsAre("Anarchism", "Anarchism is a political philosophy.", "It is sceptical of authority."),
                  ElementsAre("Autism", "Autism is a neurodevelopmental condition.")));
}

// An unclosed <doc> was merged silently into the next document (issue 48, item 15): it ends at
// the next <doc>, with a warning naming the file and both lines.
TEST(Corpus, AnUnclosedWikiExtractorDocEndsAtTheNextWithAWarning) {
  TempDir dir;
  const std::string path = dir.write("wiki_unclosed",
                                     "<doc id=\"1\" title=\"A\">\nA\nFirst text.\n\n"
                                     "<doc id=\"2\" title=\"B\">\nB\nSecond text.\n</doc>\n"
                                     "<doc id=\"3\" title=\"C\">\nC\n</doc>\n");
  testing::LogCapture log;
  EXPECT_THAT(read_all(inputs({path})),
              ElementsAre(ElementsAre("A", "First text."), ElementsAre("B", "Second text."), ElementsAre("C")));
  EXPECT_THAT(log.text(), HasSubstr(path + ":5: the <doc> opened at " + path + ":1 has no </doc> before this <doc>"));
}

TEST(Corpus, JsonLinesSplitTextIntoSentencesAndSkipEmptyDocuments) {
  EXPECT_THAT(read_all(inputs({kFixtures + "docs.jsonl"})),
              ElementsAre(ElementsAre("Hello world.", "Second paragraph.", "Third one."), ElementsAre("Only one line"),
                          ElementsAre("caf\xC3\xA9 \xE2\x96\x81 done")));
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
  const std::string long_line(60000, 'x');  // the reader's 256 KiB chunks end inside some of them
  std::string text = "a\r\n";
  for (int i = 0; i < 6; ++i) text += long_line + "\r\n";
  const auto docs = read_all(inputs({dir.write("l.txt", text + "\r\nb")}));
  ASSERT_EQ(docs.size(), 2u);
  ASSERT_EQ(docs[0].size(), 7u);
  for (int i = 1; i < 7; ++i) EXPECT_EQ(docs[0][i], long_line);
  EXPECT_EQ(docs[1][0], "b");
}

// A sentence is encoded whole, at about 120 bytes of memory per character: a 52 MB one-line
// book needed 6.3 GB. Lines over kMaxSentenceBytes become several sentences, cut at spaces.
TEST(Corpus, LinesLongerThanTheSentenceLimitAreCutAtSpaces) {
  TempDir dir;
  std::string words;
  for (int i = 0; words.size() < 3 * kMaxSentenceBytes; ++i) words += "word" + std::to_string(i % 1000) + " ";
  const std::string no_spaces(kMaxSentenceBytes + 10, 'y');
  const std::string accents = std::string(kMaxSentenceBytes - 1, 'z') + "éé";  // the limit falls inside an é
  CorpusStats stats;
  const auto docs =
      read_all(inputs({dir.write("l.txt", words + "\n\n" + no_spaces + "\n\n" + accents + "\nshort")}), &stats);
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(stats.long_lines_cut, 3);
  std::string joined;
  for (const auto& sentence : docs[0]) {
    EXPECT_LE(sentence.size(), kMaxSentenceBytes);
    EXPECT_EQ(sentence.back(), ' ') << "cut inside a word";
    joined += sentence;
  }
  EXPECT_EQ(docs[0].size(), 4u);
  EXPECT_EQ(joined, words);
  EXPECT_THAT(docs[1], ElementsAre(std::string(kMaxSentenceBytes, 'y'), std::string(10, 'y')));
  EXPECT_THAT(docs[2], ElementsAre(std::string(kMaxSentenceBytes - 1, 'z'), "éé", "short"));
}

// Format detection and the text check read the first chunk; a pipe can be read only once, so
// both happen on the stream that is then read (`eval --text <(zcat …)` once said "no text").
TEST(Corpus, PipesAreReadOnceAndDetectedFromTheirStream) {
  TempDir dir;
  const std::string fifo = (dir.path() / "fifo").string();
  for (const std::string& contents :
       {std::string("{\"text\": \"one\"}\n{\"text\": \"two\"}\n"), std::string("<doc id=\"1\">\nTitle\nbody\n</doc>\n"),
        std::string("a\nb\n\nc\n")}) {
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const std::string file = dir.write("contents", contents);
    const auto writer =
        std::async(std::launch::async, [&] { testing::run_command("cat '" + file + "' > '" + fifo + "'"); });
    const auto from_pipe = read_all(inputs({fifo}));
    writer.wait();
    std::filesystem::remove(fifo);
    EXPECT_EQ(from_pipe, read_all(inputs({file}))) << contents;
    EXPECT_FALSE(from_pipe.empty());
  }
}

TEST(CorpusErrors, BinaryFilesAreNotText) {
  TempDir dir;
  const std::string elf = dir.write("program", std::string("\x7f"
                                                           "ELF\x02\x01\x01\0\0\0",
                                                           10) +
                                                   std::string(4000, 'a'));
  EXPECT_THAT(error_of(inputs({elf})),
              HasSubstr("corpus file '" + elf + "' is not text: its first 4010 bytes hold 3 NUL"));
  std::string controls(1000, 'a');
  for (int i = 0; i < 20; ++i) controls[static_cast<size_t>(i * 50)] = '\x01';
  const std::string control_file = dir.write("controls.txt", controls);
  EXPECT_THAT(error_of(inputs({control_file})), HasSubstr("0 NUL and 20 other control characters"));
  // Inside gzip the decompressed bytes count; tabs, form feeds and CRLF are text.
  const std::string packed = gzip_file(dir, "packed.txt.gz", std::string("a\0b\n", 4));
  EXPECT_THAT(error_of(inputs({packed})), HasSubstr("is not text"));
  EXPECT_THAT(read_all(inputs({dir.write("ok.txt", "a\tb\fc\r\nd\n")})), ElementsAre(ElementsAre("a\tb\fc", "d")));
}

TEST(CorpusErrors, MissingFileOrDirectory) {
  EXPECT_THAT(error_of(inputs({"/no/such/corpus.txt"})), HasSubstr("'/no/such/corpus.txt' does not exist"));
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "empty");
  EXPECT_THAT(error_of(inputs({(dir.path() / "empty").string()})), HasSubstr("contains no files"));
}

// A corpus directory holding `loop -> ..` escaped as "[critical] unexpected error" (issue 48,
// item 13): a directory reached twice is refused naming the link; links elsewhere are followed.
TEST(CorpusErrors, ASymbolicLinkLoopIsRefusedNamingTheLink) {
  TempDir dir;
  const std::string corpus = (dir.path() / "corpus").string();
  dir.write("corpus/a.txt", "one sentence.\n");
  dir.write("elsewhere/b.txt", "another sentence.\n");
  std::filesystem::create_directory_symlink("../elsewhere", corpus + "/linked");
  EXPECT_EQ(list_corpus_files({corpus}, CorpusFormat::automatic).size(), 2u);
  std::filesystem::create_directory_symlink("..", corpus + "/loop");
  EXPECT_THAT(error_of(inputs({corpus})), HasSubstr("corpus directory '" + corpus + "': '" + corpus + "/loop"));
  EXPECT_THAT(error_of(inputs({corpus})), HasSubstr("leads to a directory read already"));
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

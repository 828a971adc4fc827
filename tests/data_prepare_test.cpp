// `linformer prepare` end to end on a tiny made-up corpus: outputs, reuse, --force, errors.

#include "data_test_corpus.h"
#include "linformer/config/recipe_loader.h"
#include "linformer/core/check.h"
#include "linformer/core/file_lock.h"
#include "linformer/core/fs.h"
#include "linformer/data/prepare.h"
#include "linformer/data/prepare_memory.h"
#include "linformer/data/prepared.h"
#include "linformer/data/split.h"
#include "linformer/data/unigram.h"
#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <map>
#include <thread>

namespace linformer::data {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_linformer;
using testing::TempDir;
namespace fs = std::filesystem;

constexpr int kDocs = 40, kSentencesPerDoc = 6;

// A recipe whose data section points into `dir`.
struct PrepareEnv {
  TempDir dir;
  std::string corpus, out, recipe;
  explicit PrepareEnv(const std::string& extra_data = "") {
    corpus = dir.write("corpus/part1.txt", testing::synthetic_text(kDocs / 2, kSentencesPerDoc, 1));
    dir.write("corpus/part2.txt", testing::synthetic_text(kDocs / 2, kSentencesPerDoc, 2));
    out = (dir.path() / "prepared").string();
    recipe = dir.write("r.toml", "base = \"" LINFORMER_SOURCE_DIR "/recipes/ci/tiny.toml\"\n[data]\ncorpus = [\"" +
                                     (dir.path() / "corpus").string() + "\"]\nprepared_dir = \"" + out +
                                     "\"\nvocab_size = 150\nvalid_fraction = 0.1\ntest_fraction = 0.1\n" + extra_data);
  }
  testing::CommandResult prepare(const std::string& args = "") const {
    return run_linformer("prepare --recipe " + recipe + " " + args);
  }
  // Entries of `dir` other than the corpus and the recipe: what prepare left behind.
  std::vector<std::string> leftovers() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir.path()))
      if (e.path().filename() != "corpus" && e.path().filename() != "r.toml" &&
          e.path().filename() != "prepared.lock")  // the lock file stays, as a run directory's run.lock
        names.push_back(e.path().filename());
    return names;
  }
};

TEST(Prepare, WritesTokenizerShardsAndMeta) {
  PrepareEnv s;
  const auto r = s.prepare();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(std::to_string(kDocs) + " documents"));
  EXPECT_THAT(r.output, HasSubstr("unknown tokens"));
  EXPECT_THAT(r.output, HasSubstr("MB/s"));

  const PreparedData p = open_prepared(s.out);
  EXPECT_EQ(p.tokenizer.vocab_size(), 150);
  EXPECT_EQ(p.meta["special_ids"]["mask"], 4);
  EXPECT_EQ(p.meta["special_ids"]["pad"], 0);
  const uint64_t docs = p.train.document_count() + p.valid.document_count() + p.test.document_count();
  EXPECT_EQ(docs, static_cast<uint64_t>(kDocs));
  EXPECT_GE(p.valid.document_count(), 1u);
  EXPECT_GE(p.test.document_count(), 1u);
  EXPECT_EQ(p.meta["summary"]["documents"], kDocs);
  EXPECT_EQ(p.meta["summary"]["sentences"], kDocs * kSentencesPerDoc);
  EXPECT_EQ(p.meta["summary"]["tokens"], p.train.token_count() + p.valid.token_count() + p.test.token_count());
  // The unigram baseline of each held-out split, from the training split's counts.
  const UnigramModel unigram(p.train);
  EXPECT_DOUBLE_EQ(p.meta["unigram"]["valid_perplexity"].get<double>(), unigram.perplexity(p.valid));
  EXPECT_DOUBLE_EQ(p.meta["unigram"]["test_perplexity"].get<double>(), unigram.perplexity(p.test));
  EXPECT_GT(unigram.perplexity(p.valid), 1.0);
  EXPECT_THAT(r.output, HasSubstr("unigram baseline"));

  // Documents keep corpus order within each split, as SplitPlan assigns them; each
  // decodes back to its sentences, each sentence ending with </s>.
  const SplitPlan plan(kDocs, 0.1, 0.1, 1);
  const auto sentences1 = testing::synthetic_sentences(kDocs / 2 * kSentencesPerDoc, 1);
  const auto sentences2 = testing::synthetic_sentences(kDocs / 2 * kSentencesPerDoc, 2);
  std::array<uint64_t, 3> next{};
  for (int d = 0; d < kDocs; ++d) {
    const Split split = plan.of(d);
    const Shard& shard = p.shard(split);
    const uint64_t index = next[static_cast<size_t>(split)]++;
    std::vector<int32_t> tokens(shard.document_end(index) - shard.document_begin(index));
    shard.copy(shard.document_begin(index), shard.document_end(index), tokens.data());
    std::vector<int> sentence;
    int s = 0;
    for (int32_t t : tokens) {
      if (t != kEosId) {
        sentence.push_back(t);
        continue;
      }
      const auto& source = d < kDocs / 2 ? sentences1 : sentences2;
      EXPECT_EQ(p.tokenizer.decode(sentence), source[(d % (kDocs / 2)) * kSentencesPerDoc + s]) << "document " << d;
      sentence.clear();
      ++s;
    }
    EXPECT_TRUE(sentence.empty()) << "the document does not end with </s>";
    EXPECT_EQ(s, kSentencesPerDoc);
  }
  EXPECT_THAT(s.leftovers(), ::testing::ElementsAre("prepared"));
}

TEST(Prepare, ReusesUpToDateOutputUnlessForcedOrChanged) {
  PrepareEnv s;
  ASSERT_EQ(s.prepare().exit_code, 0);
  const auto meta_time = fs::last_write_time(fs::path(s.out) / "meta.json");

  auto r = s.prepare();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("up to date"));
  EXPECT_EQ(fs::last_write_time(fs::path(s.out) / "meta.json"), meta_time);

  r = s.prepare("--force");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("up to date")));

  r = s.prepare("--set data.vocab_size=160");  // another setting: another key
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("up to date")));
  EXPECT_EQ(open_prepared(s.out).tokenizer.vocab_size(), 160);

  r = s.prepare("--set data.vocab_size=160 --set data.seq_len=32");  // blocks are cut at training time: same key
  EXPECT_THAT(r.output, HasSubstr("up to date"));

  // A corpus file that changed (size and mtime) is noticed.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  s.dir.write("corpus/part2.txt", testing::synthetic_text(kDocs / 2 + 1, kSentencesPerDoc, 2));
  r = s.prepare("--set data.vocab_size=160");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("up to date")));
  EXPECT_EQ(open_prepared(s.out).meta["summary"]["documents"], kDocs + 1);
  EXPECT_THAT(s.leftovers(), ::testing::ElementsAre("prepared"));
}

// The prepared data (tokenizer sample, split) follows data.seed, or `seed` when it is -1: runs
// that vary only `seed` with a fixed data.seed share the prepared data instead of replacing it.
TEST(Prepare, DataSeedDecidesThePreparedDataWhenSet) {
  PrepareEnv s;
  ASSERT_EQ(s.prepare().exit_code, 0);  // seed = 1, data.seed = -1
  const auto valid_split = [&] { return open_prepared(s.out).valid.checksum(); };
  const auto seed1_valid = valid_split();
  auto r = s.prepare("--set seed=2 --set data.seed=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("up to date"));
  r = s.prepare("--set seed=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("up to date")));
  EXPECT_NE(valid_split(), seed1_valid) << "seed 2 split the documents as seed 1 did";
  r = s.prepare("--set data.seed=2");
  EXPECT_THAT(r.output, HasSubstr("up to date"));
  r = s.prepare("--set data.seed=-2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("data.seed"));
}

// A corpus of about 0.5 MB with data.tokenizer_max_bytes = 64 KiB: the tokenizer trains on a sample
// within the bound, the same for the same seed, another for another seed.
TEST(Prepare, TheTokenizerSampleStaysWithinItsBytesDeterministicInTheSeed) {
  PrepareEnv s("tokenizer_max_bytes = 65536\n");
  s.dir.write("corpus/part1.txt", testing::synthetic_text(1500, kSentencesPerDoc, 3));
  const auto prepare_into = [&](const std::string& name, const std::string& args) {
    const std::string out = (s.dir.path() / name).string();
    const auto r = s.prepare("--set data.prepared_dir=" + out + " " + args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("(the sample is full: data.tokenizer_max_bytes)"));
    return open_prepared(out).meta;
  };
  const auto a = prepare_into("a", ""), b = prepare_into("b", ""), c = prepare_into("c", "--set data.seed=2");
  const uint64_t bytes = a["tokenizer"]["sample_bytes"];
  EXPECT_LE(bytes, 65536u);
  EXPECT_GT(bytes, 65536u - 200);  // full: the sentences are under 100 bytes
  EXPECT_LT(a["tokenizer"]["sample_sentences"].get<int64_t>(), a["summary"]["sentences"].get<int64_t>() / 5);
  EXPECT_EQ(a["tokenizer"]["hash"], b["tokenizer"]["hash"]);
  EXPECT_EQ(a["tokenizer"]["sample_bytes"], b["tokenizer"]["sample_bytes"]);
  EXPECT_NE(a["tokenizer"]["hash"], c["tokenizer"]["hash"]) << "data.seed 2 trained on the same sample";
  EXPECT_NE(a["key"], prepare_into("d", "--set data.tokenizer_max_bytes=70000")["key"]);
}

TEST(Prepare, DamagedOutputIsPreparedAgain) {
  PrepareEnv s;
  ASSERT_EQ(s.prepare().exit_code, 0);
  const std::string train = (fs::path(s.out) / "train.bin").string();
  std::string bytes = read_file(train);
  bytes[100] ^= 0x40;
  s.dir.write("prepared/train.bin", bytes);
  const auto r = s.prepare();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot be reused"));
  EXPECT_NO_THROW(open_prepared(s.out));
}

TEST(Prepare, GivenTokenizerModelAndGzipJsonLines) {
  PrepareEnv first;
  ASSERT_EQ(first.prepare().exit_code, 0);
  const std::string model = (fs::path(first.out) / "spm.model").string();

  // The same documents as JSON lines, gzip-compressed, with the first run's tokenizer.
  TempDir dir;
  std::string jsonl;
  for (uint64_t part : {1, 2}) {
    const auto sentences = testing::synthetic_sentences(kDocs / 2 * kSentencesPerDoc, part);
    for (int d = 0; d < kDocs / 2; ++d) {
      std::string text;
      for (int i = 0; i < kSentencesPerDoc; ++i) text += sentences[d * kSentencesPerDoc + i] + "\\n";
      jsonl += "{\"text\": \"" + text + "\"}\n";
    }
  }
  const std::string gz = (dir.path() / "corpus.jsonl.gz").string();
  gzFile f = gzopen(gz.c_str(), "wb");
  gzwrite(f, jsonl.data(), static_cast<unsigned>(jsonl.size()));
  gzclose(f);
  const std::string out = (dir.path() / "prepared").string();
  const auto r = run_linformer("prepare --recipe " + first.recipe + " --set 'data.corpus=[\"" + gz +
                               "\"]' --set data.prepared_dir=" + out + " --set data.tokenizer_model=" + model);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const PreparedData a = open_prepared(first.out), b = open_prepared(out);
  EXPECT_EQ(a.tokenizer.hash(), b.tokenizer.hash());
  for (Split split : kSplits) {
    const Shard &x = a.shard(split), &y = b.shard(split);
    ASSERT_EQ(x.token_count(), y.token_count()) << split_name(split);
    for (uint64_t i = 0; i < x.token_count(); ++i) ASSERT_EQ(x.token(i), y.token(i)) << split_name(split) << " " << i;
  }
}

// Each bad input: exit code 1, a message that says what is wrong, nothing written.
TEST(PrepareErrors, BadInputLeavesNothingBehind) {
  struct Case {
    std::string name, set, message;
  };
  PrepareEnv s;
  const std::string empty = s.dir.write("bad/empty.txt", "\n\n  \n");
  const std::string no_text = s.dir.write("bad/no_text.jsonl", "{\"text\": \"fine\"}\n{\"title\": \"x\"}\n");
  const std::string corrupt = s.dir.write("bad/corrupt.txt.gz", std::string("\x1f\x8b\x08\x00garbage-garbage", 19));
  const Case cases[] = {
      {"missing", "data.corpus=[\"" + s.dir.path().string() + "/nope.txt\"]", "nope.txt' does not exist"},
      {"empty", "data.corpus=[\"" + empty + "\"]", "contains no documents"},
      {"no text field", "data.corpus=[\"" + no_text + "\"]", no_text + ":2: JSON line has no \"text\" field"},
      {"corrupt gzip", "data.corpus=[\"" + corrupt + "\"]", "corrupt gzip data"},
      {"vocabulary too large", "data.vocab_size=20000", "Vocabulary size too high"},
      {"missing model", "data.tokenizer_model=" + s.dir.path().string() + "/none.model", "none.model"},
  };
  for (const auto& c : cases) {
    const auto r = s.prepare("--set '" + c.set + "'");
    EXPECT_EQ(r.exit_code, 1) << c.name << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << c.name;
    EXPECT_THAT(s.leftovers(), ::testing::ElementsAre("bad")) << c.name;
  }
}

// The memory a test's limit allows (AvailableMemory is taken through a plain function pointer).
uint64_t g_test_limit = 0;
AvailableMemory test_limit() { return {g_test_limit, "a test's limit"}; }

// The tokenizer's training is refused, naming the key to lower, the estimate and the limit, before
// it starts and with nothing written: before reading when even the corpus's bytes cannot fit, after
// reading when the sample's sentences tip it over.
TEST(PrepareErrors, ATokenizerSampleThatCannotFitIsRefusedNamingTheKey) {
  PrepareEnv s;
  const config::Recipe recipe = config::load_recipe(s.recipe, {});
  uint64_t file_bytes = 0, text_bytes = 0;
  for (uint64_t part : {1, 2}) {
    file_bytes += testing::synthetic_text(kDocs / 2, kSentencesPerDoc, part).size();
    for (const auto& sentence : testing::synthetic_sentences(kDocs / 2 * kSentencesPerDoc, part))
      text_bytes += sentence.size();
  }
  constexpr double kMiB = 1024.0 * 1024;
  const double before = 64 * kMiB + 30.0 * static_cast<double>(file_bytes);  // the constants of prepare_memory.h
  const double after = 64 * kMiB + 30.0 * static_cast<double>(text_bytes) + 200.0 * kDocs * kSentencesPerDoc;
  ASSERT_EQ(kTrainerBytesPerSampleByte, 30.0);
  ASSERT_EQ(kTrainerBytesPerSentence, 200.0);
  ASSERT_EQ(kPrepareBaseBytes, 64 * kMiB);
  ASSERT_LT(before, after - 1);
  const auto refused = [&](uint64_t limit, const std::string& sample, double needed) {
    g_test_limit = limit;
    try {
      prepare_data(recipe, false, test_limit);
      ADD_FAILURE() << "prepared within " << limit << " bytes";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("training the tokenizer on a sample of " + sample + " needs about " +
                                      fmt::format("{:.1f} MiB", needed / kMiB) + ", more than the " +
                                      fmt::format("{:.1f} MiB", static_cast<double>(limit) / kMiB) +
                                      " available (a test's limit): lower data.tokenizer_max_bytes"));
    }
    EXPECT_TRUE(s.leftovers().empty()) << s.leftovers().front();
  };
  refused(16u << 20,
          fmt::format("{:.1f} MiB (at most: data.tokenizer_max_bytes, or the corpus's size)",
                      static_cast<double>(file_bytes) / kMiB),
          before);
  refused(static_cast<uint64_t>(after) - 1,
          fmt::format("{:.1f} MiB ({} sentences)", static_cast<double>(text_bytes) / kMiB, kDocs * kSentencesPerDoc),
          after);
  g_test_limit = static_cast<uint64_t>(after) + 1;
  EXPECT_NO_THROW(prepare_data(recipe, false, test_limit));
}

TEST(PrepareErrors, FailureKeepsThePreviousOutput) {
  PrepareEnv s;
  ASSERT_EQ(s.prepare().exit_code, 0);
  const std::string meta = read_file((fs::path(s.out) / "meta.json").string());
  const auto r = s.prepare("--force --set data.vocab_size=20000");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(read_file((fs::path(s.out) / "meta.json").string()), meta);
  EXPECT_NO_THROW(open_prepared(s.out));
  EXPECT_THAT(s.leftovers(), ::testing::ElementsAre("prepared"));
}

// Two prepares on one prepared directory: the second is refused at once naming the holder
// (issue 48: both once ran and raced to install).
TEST(PrepareErrors, ASecondPrepareOnOnePreparedDirIsRefusedWithTheHoldersPid) {
  PrepareEnv s;
  {
    const FileLock held(s.out + ".lock", "test");
    const auto r = s.prepare();
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_THAT(r.output,
                HasSubstr("prepared directory '" + s.out + "' is in use by process " + std::to_string(::getpid())));
    EXPECT_THAT(s.leftovers(), ::testing::IsEmpty());
  }
  EXPECT_EQ(s.prepare().exit_code, 0);
}

// A killed prepare left <prepared_dir>.tmp.<pid>.<n> beside its output for good (issue 48, item
// 12): the next prepare removes its own directory's leftovers, not another directory's.
TEST(Prepare, LeftoversOfAKilledPrepareAreRemovedByTheNext) {
  PrepareEnv s;
  s.dir.write("prepared.tmp.4242.0/train.bin", "half");
  s.dir.write("prepared.old.tmp.4242.1/meta.json", "{}");
  s.dir.write("prepared.tmp.4242.2", "a temporary file");
  s.dir.write("prepared_other.tmp.4242.0/train.bin", "another directory's");
  const auto r = s.prepare();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("prepared.tmp.4242.0: left by a prepare that did not finish"));
  auto names = s.leftovers();
  std::sort(names.begin(), names.end());
  EXPECT_THAT(names, ::testing::ElementsAre("prepared", "prepared_other.tmp.4242.0"));
}

// SIGHUP (a closed terminal) ends prepare as SIGTERM does: the output is whole or absent, and
// the next prepare finishes the job (issue 48, item 14). The corpus is a pipe that stalls
// halfway, so the signal arrives while prepare reads.
TEST(PrepareErrors, SighupLeavesNothingHalfWritten) {
  std::signal(SIGHUP, SIG_DFL);  // an ignored SIGHUP (nohup) would pass to the child, which keeps ignoring it
  PrepareEnv s;
  const std::string pipe = (s.dir.path() / "corpus" / "stalled.txt").string();
  const std::string text = testing::synthetic_text(kDocs, kSentencesPerDoc, 3);
  s.dir.write("corpus/stalled.source", text.substr(0, text.size() / 2));
  const auto r = testing::run_command("mkfifo '" + pipe + "' && cd '" LINFORMER_SOURCE_DIR "' && { { cat '" +
                                      pipe.substr(0, pipe.size() - 4) + ".source'; exec sleep 30; } > '" + pipe +
                                      "' 2>/dev/null & writer=$!; '" LINFORMER_BINARY "' prepare --recipe " + s.recipe +
                                      " --set 'data.corpus=[\"" + pipe +
                                      "\"]' & pid=$!; sleep 1; kill -HUP $pid; wait $pid; echo exit=$?; "
                                      "kill $writer; }");
  EXPECT_THAT(r.output, HasSubstr("exit=129")) << r.output;  // ended by the signal, not finished
  EXPECT_THAT(s.leftovers(), Not(::testing::Contains("prepared")));
  fs::remove(pipe);
  fs::remove(s.dir.path() / "corpus" / "stalled.source");
  ASSERT_EQ(s.prepare().exit_code, 0);
  EXPECT_THAT(s.leftovers(), ::testing::ElementsAre("prepared"));
}

// The files of a prepared directory, with their contents: to check that one stayed as it was.
std::map<std::string, std::string> contents_of(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files[e.path().filename()] = read_file(e.path().string());
  return files;
}

// A write that fails partway through any of prepare's files (the file-size limit of `ulimit -f`,
// with SIGXFSZ ignored, fails it as a full disk would, at a chosen size) stops prepare naming the
// cause; the previous output stays whole and usable, nothing else is left behind, and once writes
// succeed again prepare completes. (Issue 46: a corpus that fills the disk during prepare.)
TEST(PrepareErrors, AWriteThatFailsAnywhereKeepsThePreviousOutputAndNothingElse) {
  PrepareEnv s;
  ASSERT_EQ(s.prepare().exit_code, 0);
  const auto before = contents_of(s.out);
  size_t largest = 0;
  for (const auto& [name, text] : before) largest = std::max(largest, text.size());
  int failures = 0;
  // dash's `ulimit -f` counts blocks of 512 bytes: each limit cuts at least the largest file. From
  // 1 KiB: LLVM's OpenMP runtime (the sanitized build's) sizes a 1 KiB shared-memory file at start.
  for (size_t blocks = 2; blocks * 512 < largest; blocks *= 4) {
    const auto r = testing::run_command("trap '' XFSZ; ulimit -f " + std::to_string(blocks) + "; cd '" +
                                        LINFORMER_SOURCE_DIR "' && '" LINFORMER_BINARY "' prepare --recipe " +
                                        s.recipe + " --force --set data.vocab_size=140");
    EXPECT_EQ(r.exit_code, 1) << blocks << " blocks: " << r.output;
    EXPECT_THAT(r.output, HasSubstr("File too large")) << blocks << " blocks";
    EXPECT_EQ(contents_of(s.out), before) << blocks << " blocks";
    EXPECT_NO_THROW(open_prepared(s.out));
    EXPECT_THAT(s.leftovers(), ::testing::ElementsAre("prepared")) << blocks << " blocks";
    ++failures;
  }
  EXPECT_GE(failures, 3);  // spm.model is hundreds of KiB: 1, 4 and 16 KiB at least
  const auto again = s.prepare("--force --set data.vocab_size=140");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(open_prepared(s.out).meta["tokenizer"]["vocab_size"], 140);
  EXPECT_THAT(s.leftovers(), ::testing::ElementsAre("prepared"));
}

// Called by prepare_data before its first pass over the corpus and again between the two passes
// (counting and sampling, then encoding): the second call removes or halves g_victim.
std::string g_victim;
bool g_truncate_victim = false;
int g_probe_calls = 0;
AvailableMemory corpus_changing_probe() {
  if (++g_probe_calls == 2) {
    if (g_truncate_victim)
      fs::resize_file(g_victim, fs::file_size(g_victim) / 2);
    else
      fs::remove(g_victim);
  }
  return available_memory();
}

// A corpus file that disappears, or shrinks, while prepare reads the corpus (between its two
// passes): an error naming the file and what happened, the previous output kept, nothing left
// behind. (Issue 46.)
TEST(PrepareErrors, ACorpusFileThatDisappearsOrShrinksMidwayKeepsThePreviousOutput) {
  for (const bool truncate : {false, true}) {
    PrepareEnv s;
    ASSERT_EQ(s.prepare().exit_code, 0);
    const auto before = contents_of(s.out);
    const config::Recipe recipe = config::load_recipe(s.recipe, {"data.vocab_size=140"});
    g_victim = (s.dir.path() / "corpus" / "part2.txt").string();
    g_truncate_victim = truncate;
    g_probe_calls = 0;
    try {
      prepare_data(recipe, true, corpus_changing_probe);
      ADD_FAILURE() << "prepared a corpus that changed midway (truncated: " << truncate << ")";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("corpus file '" + g_victim +
                                      (truncate ? "' changed while the corpus was being read"
                                                : "' disappeared while the corpus was being read")));
    }
    EXPECT_EQ(g_probe_calls, 2);
    EXPECT_EQ(contents_of(s.out), before);
    EXPECT_THAT(s.leftovers(), ::testing::ElementsAre("prepared"));
  }
}

TEST(PrepareErrors, RefusesToReplaceAForeignDirectory) {
  PrepareEnv s;
  s.dir.write("prepared/precious.txt", "not ours");
  const auto r = s.prepare();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("not replacing a directory that prepare did not make"));
  EXPECT_EQ(read_file((fs::path(s.out) / "precious.txt").string()), "not ours");
}

}  // namespace
}  // namespace linformer::data

#include "linformer/data/prepare.h"

#include "linformer/core/check.h"
#include "linformer/core/clock.h"
#include "linformer/core/fs.h"
#include "linformer/core/progress.h"
#include "linformer/core/rng.h"
#include "linformer/core/staged_dir.h"
#include "linformer/core/system_memory.h"
#include "linformer/core/version.h"
#include "linformer/data/corpus.h"
#include "linformer/data/document_encoder.h"
#include "linformer/data/hash.h"
#include "linformer/data/prepare_memory.h"
#include "linformer/data/prepared.h"
#include "linformer/data/sentence_sampler.h"
#include "linformer/data/shard.h"
#include "linformer/data/tokenizer.h"
#include "linformer/data/unigram.h"

#include <omp.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>

namespace linformer::data {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kMetaFile = "meta.json";
constexpr const char* kModelFile = "spm.model";
constexpr uint64_t kTokenizerSampleStream = 0x544F4B53414D50ull;  // "TOKSAMP"
// Documents are encoded in chunks of about this much text: enough work for every
// thread, small enough to keep memory flat.
constexpr uint64_t kChunkTextBytes = 2u << 20;
constexpr size_t kChunkDocuments = 8192;

std::string shard_file(Split s) { return std::string(split_name(s)) + ".bin"; }

json settings_of(const config::Recipe& r) {
  const config::DataConfig& d = r.data;
  return {{"corpus", d.corpus},
          {"format", std::string(config::enum_name(d.format))},
          {"document_per_line", d.document_per_line},
          {"json_text_field", d.json_text_field},
          {"tokenizer", std::string(config::enum_name(d.tokenizer))},
          {"tokenizer_model", d.tokenizer_model},
          {"vocab_size", d.vocab_size},
          {"tokenizer_max_sentences", d.tokenizer_max_sentences},
          {"tokenizer_max_bytes", d.tokenizer_max_bytes},
          {"valid_fraction", d.valid_fraction},
          {"test_fraction", d.test_fraction},
          // The effective seed under its old name: data prepared before data.seed existed stays current.
          {"seed", static_cast<int64_t>(config::data_seed(r))}};
}

std::string key_of(const config::Recipe& r, const std::vector<CorpusFile>& files) {
  json files_json = json::array();
  for (const auto& f : files)
    files_json.push_back({f.path, f.size, f.mtime_ns, std::string(config::enum_name(f.format))});
  json key = {{"version", kPreparedVersion}, {"settings", settings_of(r)}, {"files", files_json}};
  if (!r.data.tokenizer_model.empty()) {
    struct stat st {};
    if (::stat(r.data.tokenizer_model.c_str(), &st) != 0)
      LF_FAIL("data.tokenizer_model '{}': {}", r.data.tokenizer_model, std::strerror(errno));
    key["tokenizer_model_file"] = {static_cast<uint64_t>(st.st_size), mtime_ns(st)};
  }
  return fmt::format("{:016x}", hash64(key.dump()));
}

// The process's peak resident memory so far (getrusage reports kilobytes on Linux).
uint64_t peak_rss_bytes() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

json summary_json(const PrepareSummary& s) {
  json splits = json::object();
  for (Split sp : kSplits) {
    const SplitCounts& c = s.splits[static_cast<size_t>(sp)];
    splits[std::string(split_name(sp))] = {{"file", shard_file(sp)}, {"documents", c.documents}, {"tokens", c.tokens}};
  }
  return {{"files", s.files},
          {"documents", s.documents},
          {"sentences", s.sentences},
          {"tokens", s.tokens},
          {"unknown_tokens", s.unknown_tokens},
          {"invalid_utf8", s.invalid_utf8},
          {"file_bytes", s.file_bytes},
          {"text_bytes", s.text_bytes},
          {"output_bytes", s.output_bytes},
          {"seconds", s.seconds},
          {"encode_seconds", s.encode_seconds},
          {"splits", splits},
          {"phase_seconds",
           {{"read", s.read_seconds},
            {"tokenizer", s.tokenizer_seconds},
            {"encode", s.encode_seconds},
            {"write", s.write_seconds}}},
          {"text_mb_per_second", s.seconds > 0 ? static_cast<double>(s.text_bytes) / 1e6 / s.seconds : 0.0},
          {"peak_rss_bytes", s.peak_rss_bytes}};
}

PrepareSummary summary_from(const json& meta) {
  const json& j = meta.at("summary");
  PrepareSummary s;
  s.key = meta.at("key").get<std::string>();
  s.vocab_size = meta.at("tokenizer").at("vocab_size").get<int>();
  s.files = j.at("files");
  s.documents = j.at("documents");
  s.sentences = j.at("sentences");
  s.tokens = j.at("tokens");
  s.unknown_tokens = j.at("unknown_tokens");
  s.invalid_utf8 = j.at("invalid_utf8");
  s.file_bytes = j.at("file_bytes");
  s.text_bytes = j.at("text_bytes");
  s.output_bytes = j.at("output_bytes");
  s.seconds = j.at("seconds");
  s.encode_seconds = j.at("encode_seconds");
  if (j.contains("phase_seconds")) {  // not in directories prepared before it was recorded
    const json& p = j["phase_seconds"];
    s.read_seconds = p.value("read", 0.0);
    s.tokenizer_seconds = p.value("tokenizer", 0.0);
    s.write_seconds = p.value("write", 0.0);
  }
  s.peak_rss_bytes = j.value("peak_rss_bytes", uint64_t{0});
  if (meta.contains("unigram")) {
    s.unigram_valid_perplexity = meta["unigram"].value("valid_perplexity", 0.0);
    s.unigram_test_perplexity = meta["unigram"].value("test_perplexity", 0.0);
  }
  for (Split sp : kSplits) {
    const json& c = j.at("splits").at(std::string(split_name(sp)));
    s.splits[static_cast<size_t>(sp)] = {c.at("documents").get<int64_t>(), c.at("tokens").get<int64_t>()};
  }
  return s;
}

// The summary of an up-to-date prepared_dir with this key, if there is one that opens cleanly.
std::optional<PrepareSummary> reusable(const std::string& dir, const std::string& key) {
  const std::string meta_path = (fs::path(dir) / kMetaFile).string();
  if (!fs::exists(meta_path)) return std::nullopt;
  try {
    const PreparedData prepared = open_prepared(dir);
    if (prepared.meta.value("key", "") != key) return std::nullopt;
    PrepareSummary s = summary_from(prepared.meta);
    s.reused = true;
    s.dir = dir;
    return s;
  } catch (const std::exception& e) {
    spdlog::warn("{} cannot be reused, preparing again: {}", dir, e.what());
    return std::nullopt;
  }
}

// Refuses to replace a directory that is not ours: prepared_dir may be mistyped.
void check_replaceable(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec)) LF_FAIL("data.prepared_dir '{}' exists and is not a directory", dir);
  if (fs::is_empty(dir, ec) || fs::exists(fs::path(dir) / kMetaFile, ec)) return;
  LF_FAIL("data.prepared_dir '{}' is not empty and has no {}: not replacing a directory that prepare did not make", dir,
          kMetaFile);
}

// The most text the tokenizer's sample can hold: its bound, or the corpus's bytes when they are
// fewer and known (not for gzip files or pipes, whose text can be larger than their bytes).
uint64_t largest_sample(const std::vector<CorpusFile>& files, const config::DataConfig& d) {
  const auto bound = static_cast<uint64_t>(d.tokenizer_max_bytes);
  uint64_t total = 0;
  for (const auto& f : files) {
    if (f.stream || (f.path.size() >= 3 && f.path.compare(f.path.size() - 3, 3, ".gz") == 0)) return bound;
    total += f.size;
  }
  return std::min(bound, total);
}

// Trains the tokenizer on the sampler's sample (which it empties) if it fits in `available` memory,
// and records the sample in `summary`.
std::string train_on_sample(SentenceSampler& sampler, const config::DataConfig& d, uint64_t seed,
                            const AvailableMemory& available, PrepareSummary& summary) {
  check_tokenizer_fits(sampler.bytes(), sampler.size(), available);
  summary.sample_sentences = sampler.size();
  summary.sample_bytes = sampler.bytes();
  const char* bound = sampler.bytes_bound()       ? " (the sample is full: data.tokenizer_max_bytes)"
                      : sampler.sentences_bound() ? " (the sample is full: data.tokenizer_max_sentences)"
                                                  : "";
  TokenizerTrainOptions o;
  o.kind = d.tokenizer;
  o.vocab_size = d.vocab_size;
  o.threads = omp_get_max_threads();
  o.seed = seed;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string sample_text = fmt::format("{} sentences ({}) of {} ({}){}", summary.sample_sentences,
                                              format_bytes(static_cast<double>(sampler.bytes())), sampler.seen(),
                                              format_bytes(static_cast<double>(sampler.seen_bytes())), bound);
  std::string model;
  {
    Heartbeat heartbeat(fmt::format("training the {} tokenizer ({} pieces) on {}", config::enum_name(d.tokenizer),
                                    d.vocab_size, sample_text));
    model = train_tokenizer(sampler.take(), o);
  }
  spdlog::info("tokenizer: trained {} with {} pieces on {} in {:.1f} s", config::enum_name(d.tokenizer), d.vocab_size,
               sample_text, seconds_since(t0));
  return model;
}

// Pass 1 over the listed files: the corpus's documents (the splits need their number), sampling
// sentences for the tokenizer into `sampler` when there is one.
int64_t count_and_sample(const CorpusOptions& options, const std::vector<CorpusFile>& files,
                         const std::vector<std::string>& corpus, SentenceSampler* sampler) {
  CorpusReader reader(options, files);
  Progress progress("reading corpus", reader.total_file_bytes());
  int64_t documents = 0;
  Document doc;
  while (reader.next(doc)) {
    ++documents;
    if (sampler)
      for (const auto& s : doc.sentences) sampler->add(s);
    progress.update(reader.file_bytes_done());
  }
  progress.finish();
  if (documents == 0) {
    std::string inputs;
    for (const auto& c : corpus) inputs += (inputs.empty() ? "'" : ", '") + c + "'";
    LF_FAIL("the corpus ({} file{} from data.corpus = [{}]) contains no documents", reader.files().size(),
            reader.files().size() == 1 ? "" : "s", inputs);
  }
  spdlog::info("corpus: {} files, {} documents, {} sentences, {} of text", reader.stats().files, documents,
               reader.stats().sentences,
               Progress::format_amount(static_cast<double>(reader.stats().text_bytes), Progress::Unit::bytes));
  if (reader.stats().long_lines_cut > 0)
    spdlog::warn(
        "{} lines longer than {} KiB were cut at spaces into sentences of at most that (a sentence takes "
        "about 120 bytes of memory per character to encode)",
        reader.stats().long_lines_cut, kMaxSentenceBytes / 1024);
  return documents;
}

// The tokenizer: trained on the sample (`sampler`) or read from data.tokenizer_model.
Tokenizer obtain_tokenizer(const config::DataConfig& d, SentenceSampler* sampler, uint64_t seed,
                           const AvailableMemory& available, PrepareSummary& summary) {
  if (sampler)
    return Tokenizer::from_serialized(train_on_sample(*sampler, d, seed, available, summary), "the trained tokenizer");
  const std::string model = with_context(fmt::format("data.tokenizer_model '{}'", d.tokenizer_model),
                                         [&] { return read_file(d.tokenizer_model); });
  Tokenizer tokenizer = Tokenizer::from_serialized(model, d.tokenizer_model);
  if (tokenizer.vocab_size() != d.vocab_size)
    spdlog::warn("{} has {} pieces; data.vocab_size = {} does not apply to a given model", d.tokenizer_model,
                 tokenizer.vocab_size(), d.vocab_size);
  return tokenizer;
}

// The three splits' shards, their counts, and each split's count of each id for the unigram
// baseline (reading the shards again would map them whole into this process: its RSS would grow
// with the corpus).
class SplitOutputs {
 public:
  SplitOutputs(const StagedDirectory& staging, const Tokenizer& tokenizer) {
    for (Split s : kSplits) {
      const auto i = static_cast<size_t>(s);
      writers_[i] =
          std::make_unique<ShardWriter>(staging.file(shard_file(s)), tokenizer.vocab_size(), tokenizer.hash());
      id_counts_[i].assign(static_cast<size_t>(tokenizer.vocab_size()), 0);
    }
  }

  void add(Split s, const std::vector<int32_t>& ids, PrepareSummary& summary) {
    const auto i = static_cast<size_t>(s);
    writers_[i]->add_document(ids);
    for (const int32_t id : ids) ++id_counts_[i][static_cast<size_t>(id)];
    ++summary.splits[i].documents;
    summary.splits[i].tokens += static_cast<int64_t>(ids.size());
  }

  void finish() {
    for (auto& w : writers_) w->finish();
  }

  // The unigram baseline's perplexities (into `summary`) and its meta.json record.
  json unigram_baseline(PrepareSummary& summary) const {
    const UnigramModel unigram(id_counts_[static_cast<size_t>(Split::train)]);
    const auto perplexity_of = [&](Split s) {  // 0 for an empty split
      const auto i = static_cast<size_t>(s);
      return summary.splits[i].tokens == 0 ? 0.0 : unigram.perplexity(id_counts_[i]);
    };
    summary.unigram_valid_perplexity = perplexity_of(Split::valid);
    summary.unigram_test_perplexity = perplexity_of(Split::test);
    return {{"model", UnigramModel::kDescription},
            {"smoothing", UnigramModel::kSmoothing},
            {"train_tokens", unigram.train_tokens()},
            {"valid_perplexity", summary.unigram_valid_perplexity},
            {"test_perplexity", summary.unigram_test_perplexity}};
  }

 private:
  std::array<std::unique_ptr<ShardWriter>, 3> writers_;
  std::array<std::vector<int64_t>, 3> id_counts_;  // [split][id]
};

// Reads the next chunk of documents into `chunk` (false when the corpus is exhausted).
bool read_chunk(CorpusReader& reader, std::vector<Document>& chunk) {
  chunk.clear();
  uint64_t bytes = 0;
  Document doc;
  while (bytes < kChunkTextBytes && chunk.size() < kChunkDocuments && reader.next(doc)) {
    for (const auto& s : doc.sentences) bytes += s.size();
    chunk.push_back(std::move(doc));
  }
  return !chunk.empty();
}

// Pass 2 over the same files: encodes the corpus in parallel chunks, routing each document to
// its split's shard.
void encode_into_splits(const CorpusOptions& options, const std::vector<CorpusFile>& files, const Tokenizer& tokenizer,
                        const SplitPlan& plan, int64_t documents, SplitOutputs& outputs, PrepareSummary& summary) {
  CorpusReader reader(options, files);
  Progress progress("encoding", reader.total_file_bytes());
  std::vector<Document> chunk, next_chunk;
  std::vector<std::vector<int32_t>> ids;  // [document of the chunk][token]
  int64_t next_index = 0;                 // corpus index of chunk[0]
  bool more = read_chunk(reader, chunk);
  while (more) {
    // Reading (decompression, JSON, UTF-8 checks) of the next chunk overlaps encoding of this one.
    auto reading = std::async(std::launch::async, [&] { return read_chunk(reader, next_chunk); });
    const EncodeCounts counts = encode_documents(tokenizer, chunk, ids);
    summary.tokens += counts.tokens;
    summary.unknown_tokens += counts.unknown;
    for (size_t i = 0; i < chunk.size(); ++i) {
      const int64_t index = next_index + static_cast<int64_t>(i);
      LF_CHECK(index < documents, "the corpus changed while it was being prepared: more than {} documents now",
               documents);
      outputs.add(plan.of(index), ids[i], summary);
    }
    next_index += static_cast<int64_t>(chunk.size());
    more = reading.get();
    std::swap(chunk, next_chunk);
    progress.update(reader.file_bytes_done());
  }
  progress.finish();
  if (next_index != documents)
    LF_FAIL("the corpus changed while it was being prepared: {} documents, then {}", documents, next_index);
  const CorpusStats& stats = reader.stats();
  summary.files = stats.files;
  summary.documents = stats.documents;
  summary.sentences = stats.sentences;
  summary.text_bytes = stats.text_bytes;
  summary.invalid_utf8 = stats.invalid_utf8;
  summary.file_bytes = reader.total_file_bytes();
}

// meta.json's record of a prepared directory.
json meta_json(const config::Recipe& recipe, const std::string& key, const Tokenizer& tokenizer,
               const PrepareSummary& summary, json unigram) {
  const config::DataConfig& d = recipe.data;
  const bool trained = d.tokenizer_model.empty();
  return {
      {"format", "linformer-prepared"},
      {"version", kPreparedVersion},
      {"key", key},
      {"created_by", fmt::format("linformer {} (git {})", kVersion, kGitCommit)},
      {"tokenizer",
       {{"file", kModelFile},
        {"type", trained ? std::string(config::enum_name(d.tokenizer)) : std::string("given")},
        {"source", trained ? std::string("trained") : d.tokenizer_model},
        {"sample_sentences", summary.sample_sentences},
        {"sample_bytes", summary.sample_bytes},
        {"vocab_size", tokenizer.vocab_size()},
        {"hash", fmt::format("{:016x}", tokenizer.hash())}}},
      {"special_ids", {{"pad", kPadId}, {"bos", kBosId}, {"eos", kEosId}, {"unk", kUnkId}, {"mask", kMaskId}}},
      {"settings", settings_of(recipe)},
      {"summary", summary_json(summary)},
      {"unigram", std::move(unigram)},
  };
}

}  // namespace

PrepareSummary prepare_data(const config::Recipe& recipe, bool force, MemoryProbe available) {
  const auto start = std::chrono::steady_clock::now();
  const config::DataConfig& d = recipe.data;
  const CorpusOptions corpus_options = CorpusOptions::from(d);
  const std::vector<CorpusFile> files = list_corpus_files(d.corpus, d.format);
  const std::string key = key_of(recipe, files);
  const std::string& out = d.prepared_dir;
  if (!force) {
    if (auto s = reusable(out, key)) {
      spdlog::info("{} is up to date (key {}): reusing it; --force prepares again", out, key);
      return *s;
    }
  }
  check_replaceable(out);
  const bool train_tokenizer_here = d.tokenizer_model.empty();
  // Before reading: the sample cannot exceed its bound, nor the corpus (unless compressed or a pipe).
  if (train_tokenizer_here) check_tokenizer_fits(largest_sample(files, d), 0, available());
  StagedDirectory staging(out);
  PrepareSummary summary;
  summary.key = key;
  summary.dir = out;
  const uint64_t seed = config::data_seed(recipe);

  SentenceSampler sampler(d.tokenizer_max_sentences, static_cast<uint64_t>(d.tokenizer_max_bytes),
                          stream_id({kTokenizerSampleStream, seed}));
  SentenceSampler* sample = train_tokenizer_here ? &sampler : nullptr;
  const int64_t documents = count_and_sample(corpus_options, files, d.corpus, sample);
  summary.read_seconds = seconds_since(start);

  const auto tokenizer_start = std::chrono::steady_clock::now();
  const Tokenizer tokenizer = obtain_tokenizer(d, sample, seed, available(), summary);
  write_file_atomic(staging.file(kModelFile), tokenizer.serialized());
  summary.vocab_size = tokenizer.vocab_size();
  summary.tokenizer_seconds = seconds_since(tokenizer_start);

  const auto encode_start = std::chrono::steady_clock::now();
  SplitOutputs outputs(staging, tokenizer);
  encode_into_splits(corpus_options, files, tokenizer, SplitPlan(documents, d.valid_fraction, d.test_fraction, seed),
                     documents, outputs, summary);
  summary.encode_seconds = seconds_since(encode_start);

  const auto write_start = std::chrono::steady_clock::now();
  if (summary.splits[static_cast<size_t>(Split::train)].documents == 0)
    LF_FAIL("the train split is empty: the corpus has only {} documents and valid/test fractions {} and {}", documents,
            d.valid_fraction, d.test_fraction);
  outputs.finish();
  for (Split s : kSplits) summary.output_bytes += fs::file_size(staging.file(shard_file(s)));
  summary.output_bytes += tokenizer.serialized().size();
  json unigram = outputs.unigram_baseline(summary);
  summary.write_seconds = seconds_since(write_start);
  summary.seconds = seconds_since(start);
  summary.peak_rss_bytes = peak_rss_bytes();
  // meta.json last: its presence marks a complete directory.
  write_file_atomic(staging.file(kMetaFile),
                    meta_json(recipe, key, tokenizer, summary, std::move(unigram)).dump(2) + "\n");
  staging.install();
  return summary;
}

void log_prepare_summary(const PrepareSummary& s) {
  auto mb = [](double bytes) { return Progress::format_amount(bytes, Progress::Unit::bytes); };
  const auto& train = s.splits[static_cast<size_t>(Split::train)];
  const auto& valid = s.splits[static_cast<size_t>(Split::valid)];
  const auto& test = s.splits[static_cast<size_t>(Split::test)];
  spdlog::info("prepared {}{}: {} documents, {} sentences, {} tokens (vocabulary {}), unknown tokens {:.4f}%", s.dir,
               s.reused ? " (reused)" : "", s.documents, s.sentences, s.tokens, s.vocab_size,
               s.tokens > 0 ? 100.0 * static_cast<double>(s.unknown_tokens) / static_cast<double>(s.tokens) : 0.0);
  spdlog::info("splits (documents / tokens): train {} / {}, valid {} / {}, test {} / {}", train.documents, train.tokens,
               valid.documents, valid.tokens, test.documents, test.tokens);
  spdlog::info("input {} in {} files ({} of text, {} invalid UTF-8 sequences replaced), output {}", mb(s.file_bytes),
               s.files, mb(s.text_bytes), s.invalid_utf8, mb(s.output_bytes));
  if (s.unigram_valid_perplexity > 0 || s.unigram_test_perplexity > 0)
    spdlog::info(
        "unigram baseline (training-split token frequencies, add-1/2 smoothing): perplexity {:.2f} on valid, "
        "{:.2f} on test",
        s.unigram_valid_perplexity, s.unigram_test_perplexity);
  if (s.reused) return;
  const auto mb_per_s = [&](double seconds) {
    return seconds > 0 ? static_cast<double>(s.text_bytes) / 1e6 / seconds : 0.0;
  };
  spdlog::info("time {:.1f} s, {:.2f} MB/s of text end to end; encoding {:.1f} s, {:.2f} MB/s", s.seconds,
               mb_per_s(s.seconds), s.encode_seconds, mb_per_s(s.encode_seconds));
  spdlog::info(
      "phases: read and sample {:.1f} s ({:.2f} MB/s), tokenizer {:.1f} s, encode and split {:.1f} s "
      "({:.2f} MB/s), write {:.1f} s; peak RSS {}",
      s.read_seconds, mb_per_s(s.read_seconds), s.tokenizer_seconds, s.encode_seconds, mb_per_s(s.encode_seconds),
      s.write_seconds, format_bytes(static_cast<double>(s.peak_rss_bytes)));
}

}  // namespace linformer::data

#include "linformer/data/corpus.h"

#include "linformer/core/check.h"
#include "linformer/data/utf8.h"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <cerrno>
#include <cstring>

namespace linformer::data {

using config::CorpusFormat;

namespace {

// A file opened by a later pass must be the one listed: prepare counts the documents in one pass
// and encodes them in the next, and a file gone or rewritten in between would misalign them.
void check_as_listed(const CorpusFile& f) {
  struct stat st {};
  if (::stat(f.path.c_str(), &st) != 0)
    LF_FAIL("corpus file '{}' disappeared while the corpus was being read ({}): was it moved or deleted?", f.path,
            std::strerror(errno));
  if (static_cast<uint64_t>(st.st_size) != f.size || mtime_ns(st) != f.mtime_ns)
    LF_FAIL("corpus file '{}' changed while the corpus was being read: {} bytes when listed, {} now", f.path, f.size,
            static_cast<uint64_t>(st.st_size));
}

bool is_blank(std::string_view line) { return line.find_first_not_of(" \t\f\v\r") == std::string_view::npos; }

std::string where(const LineReader& r) { return r.path() + ":" + std::to_string(r.line_number()); }

// Appends `raw` as a sentence normalised to valid UTF-8, or as several of at most
// kMaxSentenceBytes when it is longer.
void add_sentence(std::string_view raw, Document& doc, CorpusStats& stats) {
  std::string s;
  s.reserve(raw.size());
  stats.invalid_utf8 += append_valid_utf8(raw, s);
  stats.text_bytes += s.size();
  if (s.size() <= kMaxSentenceBytes) {
    doc.sentences.push_back(std::move(s));
    return;
  }
  ++stats.long_lines_cut;
  std::string_view rest = s;
  while (!rest.empty()) {
    size_t cut = rest.size();
    if (cut > kMaxSentenceBytes) {
      cut = rest.find_last_of(" \t", kMaxSentenceBytes - 1);  // the piece ends with the space
      if (cut == std::string_view::npos || cut == 0) {        // no space: the last character boundary
        cut = kMaxSentenceBytes;
        while ((static_cast<unsigned char>(rest[cut]) & 0xC0) == 0x80) --cut;
      } else {
        ++cut;
      }
    }
    if (!is_blank(rest.substr(0, cut))) doc.sentences.emplace_back(rest.substr(0, cut));
    rest.remove_prefix(cut);
  }
}

}  // namespace

class CorpusReader::Parser {
 public:
  virtual ~Parser() = default;
  // Fills `doc` (cleared by the caller) with the file's next document; false at the file's end.
  virtual bool next(LineReader& in, Document& doc, CorpusStats& stats) = 0;
};

namespace {

class TextParser : public CorpusReader::Parser {
 public:
  explicit TextParser(bool document_per_line) : document_per_line_(document_per_line) {}
  bool next(LineReader& in, Document& doc, CorpusStats& stats) override {
    std::string_view line;
    while (in.next(line)) {
      if (is_blank(line)) {
        if (!doc.sentences.empty()) return true;
        continue;
      }
      if (doc.sentences.empty()) doc.source = where(in);
      add_sentence(line, doc, stats);
      if (document_per_line_) return true;
    }
    return !doc.sentences.empty();  // a file end also ends a document
  }

 private:
  bool document_per_line_;
};

class JsonLinesParser : public CorpusReader::Parser {
 public:
  explicit JsonLinesParser(std::string field) : field_(std::move(field)) {}
  bool next(LineReader& in, Document& doc, CorpusStats& stats) override {
    std::string_view line;
    while (in.next(line)) {
      if (is_blank(line)) continue;
      // nlohmann::json rejects invalid UTF-8, so normalise the raw line first.
      clean_.clear();
      stats.invalid_utf8 += append_valid_utf8(line, clean_);
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(clean_);
      } catch (const nlohmann::json::exception& e) {
        LF_FAIL("{}: invalid JSON line: {}", where(in), e.what());
      }
      if (!j.is_object()) LF_FAIL("{}: JSON line is not an object", where(in));
      const auto it = j.find(field_);
      if (it == j.end())
        LF_FAIL("{}: JSON line has no \"{}\" field (set data.json_text_field to the field that holds the text)",
                where(in), field_);
      if (!it->is_string()) LF_FAIL("{}: JSON field \"{}\" is not a string", where(in), field_);
      const std::string& text = it->get_ref<const std::string&>();
      doc.source = where(in);
      size_t begin = 0;
      while (begin <= text.size()) {
        size_t end = text.find('\n', begin);
        if (end == std::string::npos) end = text.size();
        std::string_view s(text.data() + begin, end - begin);
        if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
        if (!is_blank(s)) add_sentence(s, doc, stats);  // already valid: counts nothing twice
        begin = end + 1;
      }
      if (!doc.sentences.empty()) return true;  // documents with empty text are skipped
    }
    return false;
  }

 private:
  std::string field_;
  std::string clean_;
};

class WikiExtractorParser : public CorpusReader::Parser {
 public:
  bool next(LineReader& in, Document& doc, CorpusStats& stats) override {
    std::string_view line;
    bool inside = !opened_at_.empty();  // the previous call ended at a <doc> that opens this one
    doc.source = std::move(opened_at_);
    opened_at_.clear();
    while (in.next(line)) {
      if (line.substr(0, 5) == "<doc " || line == "<doc>") {
        // An unclosed <doc> ends at the next one instead of swallowing it.
        if (inside) warn_unclosed(doc.source, where(in));
        if (inside && !doc.sentences.empty()) {
          opened_at_ = where(in);
          return true;
        }
        inside = true;
        doc.source = where(in);
        continue;
      }
      if (line == "</doc>") {
        inside = false;
        if (!doc.sentences.empty()) return true;
        continue;
      }
      if (inside && !is_blank(line)) add_sentence(line, doc, stats);
    }
    return !doc.sentences.empty();  // an unclosed last <doc> still counts
  }

 private:
  // The first few of a file, so that a file with none closed does not flood the log.
  void warn_unclosed(const std::string& opened, const std::string& next) {
    constexpr int kReported = 5;
    if (++unclosed_ <= kReported)
      spdlog::warn("{}: the <doc> opened at {} has no </doc> before this <doc>: read as two documents, split here",
                   next, opened);
    if (unclosed_ == kReported) spdlog::warn("{}: further unclosed <doc> in this file are not reported", next);
  }

  std::string opened_at_;  // where the <doc> that ended the previous call opened
  int unclosed_ = 0;
};

std::unique_ptr<CorpusReader::Parser> make_parser(CorpusFormat format, const CorpusOptions& o) {
  switch (format) {
    case CorpusFormat::jsonl:
      return std::make_unique<JsonLinesParser>(o.json_text_field);
    case CorpusFormat::wikiextractor:
      return std::make_unique<WikiExtractorParser>();
    case CorpusFormat::text:
    case CorpusFormat::automatic:
      break;
  }
  return std::make_unique<TextParser>(o.document_per_line);
}

}  // namespace

CorpusOptions CorpusOptions::from(const config::DataConfig& data) {
  CorpusOptions o;
  o.inputs = data.corpus;
  o.format = data.format;
  o.document_per_line = data.document_per_line;
  o.json_text_field = data.json_text_field;
  return o;
}

CorpusReader::CorpusReader(const CorpusOptions& options)
    : CorpusReader(options, list_corpus_files(options.inputs, options.format)) {}

CorpusReader::CorpusReader(CorpusOptions options, std::vector<CorpusFile> files)
    : options_(std::move(options)), files_(std::move(files)) {
  for (const auto& f : files_) total_file_bytes_ += f.size;
}

CorpusReader::~CorpusReader() = default;

uint64_t CorpusReader::file_bytes_done() const { return finished_file_bytes_ + (reader_ ? reader_->file_offset() : 0); }

bool CorpusReader::next(Document& doc) {
  doc.sentences.clear();
  doc.source.clear();
  for (;;) {
    if (!reader_) {
      if (next_file_ == files_.size()) return false;
      const CorpusFile& f = files_[next_file_++];
      if (!f.stream) check_as_listed(f);
      reader_ = std::make_unique<LineReader>(f.path);
      config::CorpusFormat format = f.format;
      if (f.stream) {  // a pipe: inspected here, from the one stream there is
        check_is_text(f.path, reader_->buffered());
        if (format == config::CorpusFormat::automatic) format = detect_format(f.path, reader_->buffered());
      }
      parser_ = make_parser(format, options_);
      ++stats_.files;
    }
    if (parser_->next(*reader_, doc, stats_)) {
      ++stats_.documents;
      stats_.sentences += static_cast<int64_t>(doc.sentences.size());
      return true;
    }
    finished_file_bytes_ += files_[next_file_ - 1].size;
    reader_.reset();
    parser_.reset();
  }
}

}  // namespace linformer::data

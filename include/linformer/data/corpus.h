#pragma once
// Streaming corpus reader: one document at a time, whatever the file formats.
//
// A document is a list of sentences (paragraphs or lines), each non-empty valid
// UTF-8. Memory is bounded by the largest document, not by the corpus.
//   text          documents separated by blank lines and by file ends (so a file
//                 with no blank lines, like a Brown file, is one document); with
//                 document_per_line, every non-blank line is a document
//   jsonl         one JSON object per line; its json_text_field string is the
//                 document, split into sentences at newlines
//   wikiextractor <doc id=… title=…> … </doc> blocks; each non-blank line a sentence

#include "linformer/data/corpus_files.h"
#include "linformer/data/line_reader.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace linformer::data {

struct CorpusOptions {
  std::vector<std::string> inputs;  // files, directories, glob patterns
  config::CorpusFormat format = config::CorpusFormat::automatic;
  bool document_per_line = false;
  std::string json_text_field = "text";

  static CorpusOptions from(const config::DataConfig& data);
};

struct Document {
  std::vector<std::string> sentences;
  std::string source;  // "file:line" where the document starts, for messages
};

struct CorpusStats {
  int64_t files = 0;  // files opened so far
  int64_t documents = 0;
  int64_t sentences = 0;
  uint64_t text_bytes = 0;     // UTF-8 bytes of the sentences returned
  int64_t invalid_utf8 = 0;    // invalid sequences replaced by U+FFFD
  int64_t long_lines_cut = 0;  // lines over kMaxSentenceBytes, cut into several sentences
};

// The longest sentence handed to the tokenizer: encoding holds about 120 bytes per character of
// a sentence, so a one-line book of 52 MB once needed 6 GB. Longer lines are cut at a space
// (else at a character boundary).
inline constexpr size_t kMaxSentenceBytes = 64 * 1024;

class CorpusReader {
 public:
  // Lists the files (errors for missing paths come from here) without reading them.
  explicit CorpusReader(const CorpusOptions& options);
  // Reads the files of an earlier listing (prepare reads the corpus twice, the same files each
  // time). Either way a file must be as listed when it is opened: one that disappeared or changed
  // since (size or modification time) is an error naming it.
  CorpusReader(CorpusOptions options, std::vector<CorpusFile> files);
  ~CorpusReader();

  // The next document; false after the last one.
  bool next(Document& doc);

  const std::vector<CorpusFile>& files() const { return files_; }
  const CorpusStats& stats() const { return stats_; }
  uint64_t total_file_bytes() const { return total_file_bytes_; }
  // Bytes on disk consumed so far (compressed bytes for .gz), for progress.
  uint64_t file_bytes_done() const;

  // Interface of the per-format parsers (corpus.cpp).
  class Parser;

 private:
  CorpusOptions options_;
  std::vector<CorpusFile> files_;
  uint64_t total_file_bytes_ = 0;
  uint64_t finished_file_bytes_ = 0;
  size_t next_file_ = 0;
  std::unique_ptr<LineReader> reader_;
  std::unique_ptr<Parser> parser_;
  CorpusStats stats_;
};

}  // namespace linformer::data

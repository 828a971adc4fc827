// Fuzz target: corpus files. data::CorpusReader (and under it detect_format and LineReader) on
// one file, plain or gzip-compressed (zlib reads both, by the gzip magic).
//
// Input: byte 0 chooses the options, the rest is the file.
//   bits 0-1  data.format: 0 auto, 1 text, 2 jsonl, 3 wikiextractor
//   bit 2     data.document_per_line
//   bit 3     the file is named corpus.jsonl (auto-detection by name) instead of corpus.txt
// Invariants of what the reader returns (corpus.h): every document has sentences, every
// sentence is non-blank valid UTF-8 without a line end, and the statistics count them.

#include "fuzz_support.h"
#include "linformer/data/corpus.h"
#include "linformer/data/utf8.h"

#include <string>

using namespace linformer;

namespace {
bool is_blank(const std::string& s) { return s.find_first_not_of(" \t\f\v\r") == std::string::npos; }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t options = data[0];
  const std::string path = fuzz::scratch().file((options & 8) ? "corpus.jsonl" : "corpus.txt");
  fuzz::write_bytes(path, fuzz::as_text(data + 1, size - 1));

  data::CorpusOptions o;
  o.inputs = {path};
  const config::CorpusFormat formats[] = {config::CorpusFormat::automatic, config::CorpusFormat::text,
                                          config::CorpusFormat::jsonl, config::CorpusFormat::wikiextractor};
  o.format = formats[options & 3];
  o.document_per_line = (options & 4) != 0;

  int64_t documents = 0, sentences = 0;
  uint64_t bytes = 0;
  data::CorpusStats stats;
  fuzz::accepts([&] {
    data::CorpusReader reader(o);
    data::Document doc;
    while (reader.next(doc)) {
      FUZZ_ASSERT(!doc.sentences.empty(), "document {} at {} has no sentences", documents, doc.source);
      for (const std::string& s : doc.sentences) {
        FUZZ_ASSERT(!is_blank(s), "blank sentence in the document at {}", doc.source);
        FUZZ_ASSERT(data::is_valid_utf8(s), "invalid UTF-8 in the document at {}", doc.source);
        FUZZ_ASSERT(s.find('\n') == std::string::npos, "line end inside a sentence at {}", doc.source);
        bytes += s.size();
      }
      ++documents;
      sentences += static_cast<int64_t>(doc.sentences.size());
      stats = reader.stats();
    }
    stats = reader.stats();
    FUZZ_ASSERT(stats.documents == documents && stats.sentences == sentences && stats.text_bytes == bytes,
                "statistics {} documents, {} sentences, {} bytes; read {}, {}, {}", stats.documents, stats.sentences,
                stats.text_bytes, documents, sentences, bytes);
  });
  return 0;
}

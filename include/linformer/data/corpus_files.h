#pragma once
// Which files a corpus is made of, and what format each one has.

#include "linformer/config/recipe.h"

#include <cstdint>
#include <string>
#include <vector>

namespace linformer::data {

struct CorpusFile {
  std::string path;
  uint64_t size = 0;           // bytes on disk
  int64_t mtime_ns = 0;        // last modification, for the prepare cache key
  config::CorpusFormat format = config::CorpusFormat::automatic;  // resolved (never automatic)
};

// Expands files, directories (recursively, hidden entries skipped, sorted by path)
// and glob patterns, in the order given. Throws linformer::Error for a path that
// does not exist, a pattern that matches nothing, or an input with no files.
// `format` automatic is resolved per file by detect_format().
std::vector<CorpusFile> list_corpus_files(const std::vector<std::string>& inputs, config::CorpusFormat format);

// A file's format from its name (.jsonl, .json, with or without .gz) or, failing
// that, its first non-blank line: "{" → JSON lines, "<doc" → WikiExtractor, else text.
config::CorpusFormat detect_format(const std::string& path);

}  // namespace linformer::data

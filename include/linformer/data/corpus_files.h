#pragma once
// Which files a corpus is made of, and what format each one has.

#include "linformer/config/recipe.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

struct stat;

namespace linformer::data {

// A file's last modification time in nanoseconds (stat's st_mtim): what tells a file rewritten
// since it was listed or since a cache key was made.
int64_t mtime_ns(const struct ::stat& st);

struct CorpusFile {
  std::string path;
  uint64_t size = 0;                                              // bytes on disk
  int64_t mtime_ns = 0;                                           // last modification, for the prepare cache key
  config::CorpusFormat format = config::CorpusFormat::automatic;  // resolved unless `stream`
  // A pipe or device: its bytes can be read only once, so the reader checks it and resolves its
  // format from the stream it reads.
  bool stream = false;
};

// Expands files, directories (recursively, hidden entries skipped, sorted by path)
// and glob patterns, in the order given. Throws linformer::Error for a path that
// does not exist, a pattern that matches nothing, or an input with no files.
// `format` automatic is resolved per regular file by detect_format(); each regular file is
// checked to be text (check_is_text).
std::vector<CorpusFile> list_corpus_files(const std::vector<std::string>& inputs, config::CorpusFormat format);

// A file's format from its name (.jsonl, .json, with or without .gz) or, failing that, the
// first non-blank line of `head` (its first bytes, decompressed): "{" → JSON lines, "<doc" →
// WikiExtractor, else text.
config::CorpusFormat detect_format(const std::string& path, std::string_view head);

// Refuses a file whose first bytes (decompressed) are not text: a NUL byte, or more than 1% of
// control characters other than whitespace (an executable, an image, a shard given as corpus).
void check_is_text(const std::string& path, std::string_view head);

}  // namespace linformer::data

#include "linformer/data/corpus_files.h"

#include "linformer/core/check.h"
#include "linformer/data/line_reader.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <utility>

namespace linformer::data {

namespace fs = std::filesystem;

int64_t mtime_ns(const struct ::stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

using config::CorpusFormat;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

CorpusFile describe(const std::string& path, CorpusFormat format) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) LF_FAIL("corpus file '{}' does not exist", path);
  CorpusFile f;
  f.path = path;
  f.size = static_cast<uint64_t>(st.st_size);
  f.mtime_ns = mtime_ns(st);
  f.format = format;
  f.stream = !S_ISREG(st.st_mode);
  if (f.stream) return f;
  const LineReader head(path);
  check_is_text(path, head.buffered());
  if (format == CorpusFormat::automatic) f.format = detect_format(path, head.buffered());
  return f;
}

// The files under a corpus directory, symbolic links followed. A directory reached twice (a link
// loop such as `loop -> ..` would be read without end, two links to one place twice) is refused
// naming the link.
std::vector<std::string> files_under(const std::string& path) {
  std::set<std::pair<dev_t, ino_t>> seen;
  const auto first_visit = [&](const fs::path& dir) {
    struct stat st {};
    return ::stat(dir.c_str(), &st) != 0 || seen.insert({st.st_dev, st.st_ino}).second;
  };
  first_visit(path);
  std::vector<std::string> files;
  std::error_code ec;
  auto it = fs::recursive_directory_iterator(path, fs::directory_options::follow_directory_symlink, ec);
  if (ec) LF_FAIL("cannot list corpus directory '{}': {}", path, ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) LF_FAIL("cannot list corpus directory '{}': {}", path, ec.message());
    const fs::path& p = it->path();
    std::error_code type_ec;
    const bool directory = fs::is_directory(p, type_ec);
    if (directory && is_hidden(p))
      it.disable_recursion_pending();
    else if (directory && !first_visit(p))
      LF_FAIL(
          "corpus directory '{}': '{}' leads to a directory read already (a symbolic link loop, or two links to "
          "one directory): remove the link",
          path, p.string());
    else if (!directory && !is_hidden(p) && fs::is_regular_file(p, type_ec))
      files.push_back(p.string());
  }
  return files;
}

void add_path(const std::string& path, CorpusFormat format, std::vector<CorpusFile>& out) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> files = files_under(path);
    if (files.empty()) LF_FAIL("corpus directory '{}' contains no files", path);
    std::sort(files.begin(), files.end());
    for (const auto& f : files) out.push_back(describe(f, format));
    return;
  }
  if (!fs::exists(path, ec)) LF_FAIL("corpus path '{}' does not exist", path);
  out.push_back(describe(path, format));
}

}  // namespace

std::vector<CorpusFile> list_corpus_files(const std::vector<std::string>& inputs, CorpusFormat format) {
  LF_CHECK(!inputs.empty(), "no corpus given");
  std::vector<CorpusFile> files;
  for (const std::string& input : inputs) {
    if (input.find_first_of("*?[") == std::string::npos) {
      add_path(input, format, files);
      continue;
    }
    glob_t g{};
    const int rc = ::glob(input.c_str(), GLOB_ERR, nullptr, &g);
    std::vector<std::string> matches(g.gl_pathv, g.gl_pathv + g.gl_pathc);  // glob sorts them
    globfree(&g);
    if (rc == GLOB_NOMATCH || matches.empty()) LF_FAIL("corpus pattern '{}' matches no files", input);
    if (rc != 0) LF_FAIL("cannot expand corpus pattern '{}'", input);
    for (const auto& m : matches) add_path(m, format, files);
  }
  return files;
}

CorpusFormat detect_format(const std::string& path, std::string_view head) {
  if (ends_with(path, ".jsonl") || ends_with(path, ".json") || ends_with(path, ".jsonl.gz") ||
      ends_with(path, ".json.gz"))
    return CorpusFormat::jsonl;
  for (int i = 0; i < 100 && !head.empty(); ++i) {
    const size_t end = head.find('\n');
    std::string_view line = head.substr(0, end);
    head.remove_prefix(end == std::string_view::npos ? head.size() : end + 1);
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) continue;
    line.remove_prefix(first);
    if (line.substr(0, 1) == "{") return CorpusFormat::jsonl;
    if (line.substr(0, 4) == "<doc") return CorpusFormat::wikiextractor;
    return CorpusFormat::text;
  }
  return CorpusFormat::text;
}

void check_is_text(const std::string& path, std::string_view head) {
  head = head.substr(0, 64 * 1024);
  size_t nul = 0, control = 0;
  for (const char c : head) {
    const auto u = static_cast<unsigned char>(c);
    nul += u == 0;
    control += (u < 0x20 && u != '\t' && u != '\n' && u != '\r' && u != '\f' && u != '\v') || u == 0x7f;
  }
  if (nul > 0 || control * 100 > head.size())
    LF_FAIL(
        "corpus file '{}' is not text: its first {} bytes hold {} NUL and {} other control characters (corpus "
        "files are plain text, JSON lines or WikiExtractor output, optionally gzipped)",
        path, head.size(), nul, control - nul);
}

}  // namespace linformer::data

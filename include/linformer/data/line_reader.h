#pragma once
// Lines of a file, plain or gzip-compressed, read in fixed-size chunks so memory
// does not depend on the file's size (only on its longest line).
//
// zlib's gz* functions read both: a file without the gzip magic is passed
// through unchanged. Line ends "\n" and "\r\n" are removed. Corrupt or truncated
// gzip data is an error naming the file and the line reached.

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

namespace linformer::data {

class LineReader {
 public:
  // Opens `path`; throws linformer::Error if it is missing or unreadable.
  explicit LineReader(const std::string& path);
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its line end; valid until the next call. False at the end.
  bool next(std::string_view& line);

  const std::string& path() const { return path_; }
  int64_t line_number() const { return line_number_; }  // of the line last returned, 1-based
  bool compressed() const { return compressed_; }
  // The data read but not yet returned as lines: after construction, the file's first chunk
  // (up to 256 KiB, decompressed), so a pipe can be inspected without losing what was read.
  std::string_view buffered() const { return std::string_view(buffer_).substr(begin_); }
  // Bytes of the file on disk consumed so far (for progress).
  uint64_t file_offset() const;

 private:
  bool fill();  // reads another chunk; false at the end of the file

  std::string path_;
  struct GzClose {
    void operator()(gzFile file) const { gzclose(file); }
  };
  // Closed however the reader ends, a constructor that throws on corrupt data included.
  std::unique_ptr<std::remove_pointer_t<gzFile>, GzClose> file_;
  bool compressed_ = false;
  bool eof_ = false;
  std::string buffer_;  // data read but not yet returned: buffer_[begin_, end)
  size_t begin_ = 0;
  std::string line_;  // a line with "\r" removed when needed
  int64_t line_number_ = 0;
};

}  // namespace linformer::data

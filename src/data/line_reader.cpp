#include "linformer/data/line_reader.h"

#include "linformer/core/check.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace linformer::data {

namespace {
constexpr size_t kChunkBytes = 1 << 18;
}  // namespace

LineReader::LineReader(const std::string& path) : path_(path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) LF_FAIL("corpus file '{}' does not exist", path);
  if (std::filesystem::is_directory(path, ec)) LF_FAIL("corpus file '{}' is a directory", path);
  file_.reset(gzopen(path.c_str(), "rb"));
  if (!file_) LF_FAIL("cannot open corpus file '{}': {}", path, std::strerror(errno ? errno : ENOMEM));
  gzbuffer(file_.get(), kChunkBytes);
  // gzdirect() is only meaningful after the first read, which fill() does.
  if (!fill() && buffer_.empty()) eof_ = true;
  compressed_ = gzdirect(file_.get()) == 0;
}

uint64_t LineReader::file_offset() const {
  const z_off_t offset = gzoffset(file_.get());
  return offset < 0 ? 0 : static_cast<uint64_t>(offset);
}

bool LineReader::fill() {
  if (eof_) return false;
  // Drop what was consumed, keep the partial line.
  buffer_.erase(0, begin_);
  begin_ = 0;
  const size_t old = buffer_.size();
  buffer_.resize(old + kChunkBytes);
  const int n = gzread(file_.get(), buffer_.data() + old, static_cast<unsigned>(kChunkBytes));
  if (n < 0) {
    int code = 0;
    const char* message = gzerror(file_.get(), &code);
    LF_FAIL("{}: corrupt gzip data after line {}: {}", path_, line_number_,
            code == Z_ERRNO ? std::strerror(errno) : message);
  }
  buffer_.resize(old + static_cast<size_t>(n));
  if (n == 0) {
    // zlib reports a truncated stream only as an end of file plus an error code.
    int code = 0;
    const char* message = gzerror(file_.get(), &code);
    if (code != Z_OK && code != Z_STREAM_END)
      LF_FAIL("{}: corrupt gzip data after line {}: {}", path_, line_number_, message);
    eof_ = true;
    return false;
  }
  return true;
}

bool LineReader::next(std::string_view& line) {
  for (;;) {
    const size_t nl = buffer_.find('\n', begin_);
    if (nl != std::string::npos) {
      size_t end = nl;
      if (end > begin_ && buffer_[end - 1] == '\r') --end;
      line = std::string_view(buffer_.data() + begin_, end - begin_);
      begin_ = nl + 1;
      ++line_number_;
      return true;
    }
    if (!fill()) break;
  }
  if (begin_ >= buffer_.size()) return false;
  // The last line has no line end.
  line_.assign(buffer_, begin_, std::string::npos);
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  begin_ = buffer_.size();
  ++line_number_;
  line = line_;
  return true;
}

}  // namespace linformer::data

#include "linformer/core/fs.h"

#include "linformer/core/check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace linformer {

namespace {
std::string errno_text(int error) { return std::strerror(error); }

std::atomic<int64_t> g_write_budget{-1};  // bytes left before injected failures; negative: unlimited

// write(2) until everything is written; returns 0 or the errno of the failure.
int write_all(int fd, const char* p, size_t left) {
  while (left > 0) {
    size_t chunk = left;
    if (g_write_budget.load() >= 0) {
      const int64_t budget = g_write_budget.load();
      if (budget == 0) return ENOSPC;
      chunk = std::min<size_t>(chunk, static_cast<size_t>(budget));
    }
    const ssize_t n = ::write(fd, p, chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    if (g_write_budget.load() >= 0) g_write_budget -= n;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return 0;
}

void fsync_directory_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort: some file systems do not allow opening directories
  ::fsync(fd);
  ::close(fd);
}
}  // namespace

void fail_writes_after_bytes_for_testing(int64_t bytes) { g_write_budget = bytes; }

void create_directories_or_fail(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) LF_FAIL("cannot create the directory '{}': {}", dir, ec.message());
  if (!std::filesystem::is_directory(dir, ec)) LF_FAIL("'{}' exists and is not a directory", dir);
}

void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::string temporary_path_for(const std::string& path) {
  static std::atomic<int> counter{0};
  return fmt::format("{}.tmp.{}.{}", path, ::getpid(), counter++);
}

std::vector<std::string> remove_stale_temporaries(const std::string& dir) {
  static const std::regex temporary(R"(.+\.tmp\.[0-9]+\.[0-9]+)");
  std::vector<std::string> removed;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return removed;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, temporary)) continue;
    std::filesystem::remove_all(entry.path(), ec);
    if (ec) LF_FAIL("cannot remove the stale temporary '{}': {}", entry.path().string(), ec.message());
    removed.push_back(name);
  }
  return removed;
}

std::vector<std::string> remove_stale_temporaries_of(const std::string& target) {
  const std::filesystem::path path(target);
  const std::string base = path.filename().string();
  const std::filesystem::path parent = path.parent_path().empty() ? "." : path.parent_path();
  std::vector<std::string> removed;
  std::error_code ec;
  if (base.empty() || !std::filesystem::is_directory(parent, ec)) return removed;
  static const std::regex suffix(R"((\.old)?\.tmp\.[0-9]+\.[0-9]+)");
  for (const auto& entry : std::filesystem::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.compare(0, base.size(), base) != 0 || !std::regex_match(name.substr(base.size()), suffix)) continue;
    std::filesystem::remove_all(entry.path(), ec);
    if (ec) LF_FAIL("cannot remove the stale temporary '{}': {}", entry.path().string(), ec.message());
    removed.push_back(entry.path().string());
  }
  return removed;
}

void commit_rename(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    const std::string why = errno_text(errno);
    std::remove(from.c_str());
    LF_FAIL("cannot rename '{}' to '{}': {}", from, to, why);
  }
  fsync_directory_of(to);
}

void write_file_atomic(const std::string& path, std::string_view contents) {
  const std::string tmp = temporary_path_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) LF_FAIL("cannot create '{}': {}", tmp, errno_text(errno));
  int error = write_all(fd, contents.data(), contents.size());
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) {
    std::remove(tmp.c_str());
    LF_FAIL("cannot write '{}': {}", path, errno_text(error));
  }
  commit_rename(tmp, path);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) LF_FAIL("cannot open '{}': {}", path, errno_text(errno));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) LF_FAIL("cannot read '{}'", path);
  return s.str();
}

AppendFile::AppendFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) LF_FAIL("cannot open '{}' for appending: {}", path, errno_text(errno));
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

AppendFile::AppendFile(AppendFile&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) { other.fd_ = -1; }

AppendFile& AppendFile::operator=(AppendFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

uint64_t AppendFile::size() const {
  struct stat st {};
  if (fd_ < 0 || ::fstat(fd_, &st) != 0) LF_FAIL("cannot read the size of '{}': {}", path_, errno_text(errno));
  return static_cast<uint64_t>(st.st_size);
}

void AppendFile::truncate(uint64_t bytes) {
  if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0)
    LF_FAIL("cannot cut '{}' back to {} bytes: {}", path_, bytes, errno_text(errno));
}

void AppendFile::append(std::string_view record) {
  const uint64_t before = size();
  const int error = write_all(fd_, record.data(), record.size());
  if (error != 0) {
    // Cut the partial record off (shrinking a file needs no space), so readers see whole records.
    const bool cut = ::ftruncate(fd_, static_cast<off_t>(before)) == 0;
    LF_FAIL("cannot write to '{}': {}{}", path_, errno_text(error),
            cut ? "" : fmt::format(" (and cutting its partial last record off failed: {})", errno_text(errno)));
  }
}

}  // namespace linformer

#include "linformer/core/fs.h"

#include "linformer/core/check.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace linformer {

namespace {
std::string errno_text() { return std::strerror(errno); }

void fsync_directory_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort: some file systems do not allow opening directories
  ::fsync(fd);
  ::close(fd);
}
}  // namespace

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

void commit_rename(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    const std::string why = errno_text();
    std::remove(from.c_str());
    LF_FAIL("cannot rename '{}' to '{}': {}", from, to, why);
  }
  fsync_directory_of(to);
}

void write_file_atomic(const std::string& path, std::string_view contents) {
  const std::string tmp = temporary_path_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) LF_FAIL("cannot create '{}': {}", tmp, errno_text());
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = errno_text();
      ::close(fd);
      std::remove(tmp.c_str());
      LF_FAIL("cannot write '{}': {}", path, why);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = errno_text();
    std::remove(tmp.c_str());
    LF_FAIL("cannot flush '{}' to disk: {}", path, why);
  }
  commit_rename(tmp, path);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) LF_FAIL("cannot open '{}': {}", path, errno_text());
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) LF_FAIL("cannot read '{}'", path);
  return s.str();
}

}  // namespace linformer

#include "linformer/core/file_lock.h"

#include "linformer/core/check.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <string>

namespace linformer {

namespace {
// The pid the holder wrote, or "" (it may not have written it yet).
std::string holder_pid(int fd) {
  char buffer[32] = {};
  const ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  std::string pid = n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "";
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid;
}
}  // namespace

FileLock::FileLock(const std::string& path, const std::string& what) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) LF_FAIL("cannot create the lock file '{}': {}", path, std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string pid = holder_pid(fd_);
    ::close(fd_);
    fd_ = -1;
    if (error == EWOULDBLOCK)
      LF_FAIL("{} is in use by {} (lock file {}): wait for it to finish or stop it first", what,
              pid.empty() ? "another process" : "process " + pid, path);
    LF_FAIL("cannot lock '{}': {}", path, std::strerror(error));
  }
  // Best effort: a full disk must not stop a process that holds the lock.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, pid.data(), pid.size(), 0);
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the lock
}

}  // namespace linformer

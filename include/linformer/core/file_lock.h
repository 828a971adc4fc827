#pragma once
// One process at a time: an exclusive advisory lock (flock) on a lock file, held until the
// FileLock is destroyed or the process dies (the kernel releases it then, so a killed run never
// leaves a stale lock behind). The holder writes its pid into the file so that a refused
// process can say who holds it.

#include <string>

namespace linformer {

class FileLock {
 public:
  // Takes the lock on `path` (created if absent) at once, or throws Error:
  // "<what> is in use by process <pid> (lock file <path>)".
  FileLock(const std::string& path, const std::string& what);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace linformer

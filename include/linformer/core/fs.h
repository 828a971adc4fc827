#pragma once
// Files that are either complete or absent: write to a temporary name beside the
// target, fsync, rename over the target, fsync the directory. A crash at any point
// leaves the old file (or none), never a half-written one. Every write is checked: a full
// disk or any other write error throws linformer::Error naming the file.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace linformer {

// Atomically replaces `path` with `contents`; throws linformer::Error naming the path.
void write_file_atomic(const std::string& path, std::string_view contents);

// The whole file as bytes; throws linformer::Error naming the path. Works on pipes too.
std::string read_file(const std::string& path);

// A temporary name beside `path` that no other process uses ("path.tmp.<pid>.<n>").
std::string temporary_path_for(const std::string& path);

// Removes the entries of `dir` that temporary_path_for() made ("*.tmp.<pid>.<n>", files or
// directories) and a crash or a failed write left behind; returns their names. Only call it
// while no other process can be writing there (under the directory's FileLock).
std::vector<std::string> remove_stale_temporaries(const std::string& dir);

// Removes what temporary_path_for(target) and StagedDirectory made beside `target` and a killed
// process left ("<target>.tmp.<pid>.<n>", "<target>.old.tmp.<pid>.<n>"); returns their paths.
// Only call it under a lock that keeps every other writer of `target` out.
std::vector<std::string> remove_stale_temporaries_of(const std::string& target);

// Creates `dir` and its parents unless they exist; throws Error naming it otherwise.
void create_directories_or_fail(const std::string& dir);

// Fsyncs a file or directory (best effort: some file systems refuse to open directories).
void fsync_path(const std::string& path);

// Renames `from` to `to` and fsyncs `to`'s directory so the rename survives a crash.
void commit_rename(const std::string& from, const std::string& to);

// A file that only grows by whole records: an append that fails (a full disk, say) is cut
// back off, so the file never ends in a partial record, and throws Error naming the file.
class AppendFile {
 public:
  AppendFile() = default;
  explicit AppendFile(const std::string& path);  // opens for appending, creating it
  ~AppendFile();
  AppendFile(AppendFile&& other) noexcept;
  AppendFile& operator=(AppendFile&& other) noexcept;

  void append(std::string_view record);
  uint64_t size() const;
  // Cuts the file back to `bytes` (to undo a record whose companion in another file failed).
  void truncate(uint64_t bytes);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Fault injection for the tests: every write through this file's functions fails with "No
// space left on device" once `bytes` more bytes have been written (negative: never fail).
void fail_writes_after_bytes_for_testing(int64_t bytes);

}  // namespace linformer

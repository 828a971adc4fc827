#pragma once
// Files that are either complete or absent: write to a temporary name beside the
// target, fsync, rename over the target, fsync the directory. A crash at any point
// leaves the old file (or none), never a half-written one.

#include <string>
#include <string_view>

namespace linformer {

// Atomically replaces `path` with `contents`; throws linformer::Error naming the path.
void write_file_atomic(const std::string& path, std::string_view contents);

// The whole file as bytes; throws linformer::Error naming the path.
std::string read_file(const std::string& path);

// A temporary name beside `path` that no other process uses ("path.tmp.<pid>.<n>").
std::string temporary_path_for(const std::string& path);

// Fsyncs a file or directory (best effort: some file systems refuse to open directories).
void fsync_path(const std::string& path);

// Renames `from` to `to` and fsyncs `to`'s directory so the rename survives a crash.
void commit_rename(const std::string& from, const std::string& to);

}  // namespace linformer

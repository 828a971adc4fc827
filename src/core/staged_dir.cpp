#include "linformer/core/staged_dir.h"

#include "linformer/core/check.h"
#include "linformer/core/fs.h"

#include <filesystem>

namespace linformer {

namespace fs = std::filesystem;

StagedDirectory::StagedDirectory(std::string target) : target_(std::move(target)) {
  const fs::path parent = fs::path(target_).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) LF_FAIL("cannot create '{}': {}", parent.string(), ec.message());
  path_ = temporary_path_for(target_);
  if (!fs::create_directory(path_, ec)) LF_FAIL("cannot create '{}': {}", path_, ec ? ec.message() : "exists");
}

StagedDirectory::~StagedDirectory() {
  std::error_code ec;
  if (!installed_) fs::remove_all(path_, ec);
}

std::string StagedDirectory::file(const std::string& name) const { return (fs::path(path_) / name).string(); }

void StagedDirectory::install() {
  fsync_path(path_);
  std::error_code ec;
  std::string old;
  if (fs::exists(target_, ec)) {
    old = temporary_path_for(target_ + ".old");
    commit_rename(target_, old);
  }
  commit_rename(path_, target_);
  installed_ = true;
  if (!old.empty()) fs::remove_all(old, ec);
}

}  // namespace linformer

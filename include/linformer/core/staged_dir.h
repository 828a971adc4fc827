#pragma once
// A directory built beside its target under a temporary name and installed whole: a crash or
// an error before install() leaves the old target (or none) and no half-built one; the
// temporary directory is removed unless installed. Prepared data and checkpoints use it.

#include <string>

namespace linformer {

class StagedDirectory {
 public:
  // Creates "<target>.tmp.<pid>.<n>" (and target's parent).
  explicit StagedDirectory(std::string target);
  ~StagedDirectory();
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const;

  // Fsyncs the directory, then replaces the target with it (an existing target is renamed away
  // first, then removed).
  void install();

 private:
  std::string target_, path_;
  bool installed_ = false;
};

}  // namespace linformer

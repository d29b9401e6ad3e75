// A task's output folder assembled beside its final place and renamed into it whole: a folder
// appears complete or not at all.
#pragma once

#include <filesystem>

namespace mrcnn::io {

// The folder ".<name>.partial" beside `final_dir` (the remains of a task that died there
// removed first), renamed into final_dir (over an empty folder too) by moveTo: removed on the
// way out unless moved.
class StagingDir {
 public:
  explicit StagingDir(const std::filesystem::path& final_dir);
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  void moveTo(const std::filesystem::path& final_dir);

 private:
  std::filesystem::path path_;
  bool kept_ = false;
};

}  // namespace mrcnn::io

#include "io/staging_dir.h"

#include "io/atomic_file.h"

namespace mrcnn::io {

namespace fs = std::filesystem;

StagingDir::StagingDir(const fs::path& final_dir)
    : path_(final_dir.parent_path() / ("." + final_dir.filename().string() + ".partial")) {
  std::error_code ec;
  fs::remove_all(path_, ec);
  fs::create_directories(path_);
}

StagingDir::~StagingDir() {
  std::error_code ec;
  if (!kept_) fs::remove_all(path_, ec);
}

void StagingDir::moveTo(const fs::path& final_dir) {
  fs::rename(path_, final_dir);
  kept_ = true;
  syncPath(final_dir.parent_path(), /*directory=*/true);
}

}  // namespace mrcnn::io

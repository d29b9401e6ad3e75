// A file that lives as long as the object that wrote it: for a tool that reads its input only
// from disk (OpenVINO's model reader), written whole (writeFileAtomic) and removed when the
// object goes, an exception included, so a failed step leaves no stray file in the user's
// folder.
#pragma once

#include <filesystem>
#include <string_view>

namespace mrcnn::io {

class ScratchFile {
 public:
  // Throws as writeFileAtomic does (a full disk, an unwritable folder).
  ScratchFile(std::filesystem::path path, std::string_view contents);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace mrcnn::io

#include "io/scratch_file.h"

#include <system_error>
#include <utility>

#include "io/atomic_file.h"

namespace mrcnn::io {

ScratchFile::ScratchFile(std::filesystem::path path, std::string_view contents)
    : path_(std::move(path)) {
  writeFileAtomic(path_, contents);
}

ScratchFile::~ScratchFile() {
  std::error_code ec;  // nothing to do about a file that cannot be removed
  std::filesystem::remove(path_, ec);
}

}  // namespace mrcnn::io

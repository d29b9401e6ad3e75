// Failures of writing files. A full disk (no space, a quota, a file size limit) is told apart
// from other failures and carries the folder and the space involved, so that every task ends
// on it with the same clear message and exit code, whatever call ran out of room.
#pragma once

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace mrcnn::io {

class DiskFullError : public std::runtime_error {
 public:
  // `file` is what could not be written; `needed_bytes` its size where known (0: unknown);
  // `err` ENOSPC or EDQUOT (the disk or the quota is full) or EFBIG (the file size limit).
  DiskFullError(const std::filesystem::path& file, uint64_t needed_bytes, int err = ENOSPC);

  const std::filesystem::path& folder() const { return folder_; }
  uint64_t neededBytes() const { return needed_; }
  uint64_t freeBytes() const { return free_; }
  int error() const { return err_; }

 private:
  std::filesystem::path folder_;
  uint64_t needed_ = 0;
  uint64_t free_ = 0;
  int err_ = ENOSPC;
};

// ENOSPC, EDQUOT or EFBIG.
bool isDiskFull(int err);

// Throws DiskFullError when `err` says the disk is full, else std::runtime_error
// "<path>: <what>: <the system's reason>".
[[noreturn]] void throwWriteError(const std::filesystem::path& path, const std::string& what,
                                  int err, uint64_t needed_bytes = 0);

// Throws DiskFullError when the folder `file` goes into has fewer than `needed_bytes` free
// for this user. Where the free space cannot be read, nothing is checked.
void requireFreeSpace(const std::filesystem::path& file, uint64_t needed_bytes);

// Bytes free for this user in `folder` (or the nearest existing folder above it); UINT64_MAX
// when unknown.
uint64_t freeBytes(const std::filesystem::path& folder);

// "69.2 MB", "512 bytes": sizes in decimal units, as disk tools print them.
std::string byteSize(uint64_t bytes);

}  // namespace mrcnn::io

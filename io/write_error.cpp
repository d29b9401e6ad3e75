#include "io/write_error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

namespace mrcnn::io {
namespace {

namespace fs = std::filesystem;

fs::path folderOf(const fs::path& file) {
  return file.has_parent_path() ? file.parent_path() : fs::path(".");
}

std::string diskFullMessage(const fs::path& file, uint64_t needed, uint64_t free, int err) {
  const char* what = err == EFBIG    ? "the file size limit (ulimit -f) is reached"
                     : err == EDQUOT ? "the disk quota is full"
                                     : "the disk is full";
  std::string text = folderOf(file).string() + ": " + what + ": " + file.filename().string();
  if (needed > 0)
    text += " needs " + byteSize(needed);
  else
    text += " could not be written";
  if (err != EFBIG && free != std::numeric_limits<uint64_t>::max())
    text += ", " + byteSize(free) + " free";
  return text + (err == EFBIG ? "; raise the limit" : "; free some space or choose another folder");
}

}  // namespace

DiskFullError::DiskFullError(const fs::path& file, uint64_t needed_bytes, int err)
    : std::runtime_error(diskFullMessage(file, needed_bytes, io::freeBytes(folderOf(file)), err)),
      folder_(folderOf(file)),
      needed_(needed_bytes),
      free_(io::freeBytes(folder_)),
      err_(err) {}

bool isDiskFull(int err) {
  return err == ENOSPC || err == EDQUOT || err == EFBIG;
}

void throwWriteError(const fs::path& path, const std::string& what, int err,
                     uint64_t needed_bytes) {
  if (isDiskFull(err)) throw DiskFullError(path, needed_bytes, err);
  throw std::runtime_error(path.string() + ": " + what + ": " + std::strerror(err));
}

uint64_t freeBytes(const fs::path& folder) {
  std::error_code ec;
  fs::path p = folder.empty() ? fs::path(".") : folder;
  // The folder may not exist yet: its nearest existing ancestor is on the same disk.
  while (!fs::exists(p, ec) && p.has_parent_path() && p.parent_path() != p)
    p = p.parent_path();
  const fs::space_info info = fs::space(p, ec);
  if (ec || info.available == static_cast<std::uintmax_t>(-1))
    return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(info.available);
}

void requireFreeSpace(const fs::path& file, uint64_t needed_bytes) {
  const uint64_t free = freeBytes(folderOf(file));
  if (free != std::numeric_limits<uint64_t>::max() && free < needed_bytes)
    throw DiskFullError(file, needed_bytes);
}

std::string byteSize(uint64_t bytes) {
  char buf[32];
  if (bytes < 1000) {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
    return buf;
  }
  static constexpr const char* kUnits[] = {"kB", "MB", "GB", "TB", "PB"};
  double v = static_cast<double>(bytes) / 1000.0;
  size_t unit = 0;
  while (v >= 1000.0 && unit + 1 < std::size(kUnits)) {
    v /= 1000.0;
    ++unit;
  }
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  return buf;
}

}  // namespace mrcnn::io

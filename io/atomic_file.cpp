#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "io/write_error.h"

namespace mrcnn::io {

void syncPath(const std::filesystem::path& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) throwWriteError(path, "cannot open to flush", errno);
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    throwWriteError(path, "cannot flush to disk", err);
  }
  ::close(fd);
}

void writeFileAtomic(const std::filesystem::path& path, std::string_view contents,
                     AtomicWriteOptions options) {
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throwWriteError(path, "cannot create its folder", ec.value(), contents.size());

  constexpr int kSuffix = 4;  // ".tmp"
  std::string temp = (dir / ("." + path.filename().string() + ".XXXXXX.tmp")).string();
  const int fd = ::mkstemps(temp.data(), kSuffix);
  if (fd < 0) throwWriteError(path, "cannot create a temporary file", errno, contents.size());
  const auto abandon = [&](const char* what, int err) {
    ::close(fd);
    ::unlink(temp.c_str());
    throwWriteError(path, what, err, contents.size());
  };
  std::size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) abandon("cannot write", n < 0 ? errno : ENOSPC);
    written += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0) abandon("cannot set the permissions", errno);
  if (::fsync(fd) != 0) abandon("cannot flush to disk", errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throwWriteError(path, "cannot close", err, contents.size());
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throwWriteError(path, "cannot rename into place", err);
  }
  if (options.durable) syncPath(dir, /*directory=*/true);
}

}  // namespace mrcnn::io

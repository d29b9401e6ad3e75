#include "engine/util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace mrcnn::engine {
namespace {

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path, int err) {
  throw std::runtime_error(what + " " + path.string() + ": " + std::strerror(err));
}

}  // namespace

void writeFileAtomic(const std::filesystem::path& path, std::string_view contents) {
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail("cannot create the folder of", path, ec.value());

  std::string temp = (dir / ("." + path.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) fail("cannot create a temporary file for", path, errno);
  const auto abandon = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    fail(what, path, err);
  };
  std::size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon("cannot write");
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0) abandon("cannot set permissions of");
  if (::fsync(fd) != 0) abandon("cannot flush");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    fail("cannot close", path, err);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    fail("cannot rename into place", path, err);
  }
}

}  // namespace mrcnn::engine

#include "weights/resolve.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "io/write_error.h"
#include "weights/sha256.h"

namespace mrcnn::weights {
namespace fs = std::filesystem;

fs::path weightsCacheDir() {
  // The XDG base directory rules: a relative XDG_CACHE_HOME is invalid and ignored.
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg && fs::path(xdg).is_absolute())
    return fs::path(xdg) / "mrcnn-workbench" / "weights";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "mrcnn-workbench" / "weights";
  throw WeightsError(
      "no cache folder for downloaded weights: neither XDG_CACHE_HOME nor HOME is set");
}

fs::path cachedFile(const CatalogueEntry& entry, const fs::path& cache_dir) {
  return cache_dir / entry.file_name;
}

namespace {

// An exclusive lock on the cache folder for as long as it lives (flock on the folder
// itself, so that no lock file is left among the weights).
class CacheLock {
 public:
  explicit CacheLock(const fs::path& dir) {
    fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0)
      throw WeightsError(dir.string() + ": cannot open the weights cache: " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      // A file system without locks (some network mounts): go on unlocked, as one process
      // alone would; the download is still atomic, only two at once may both download.
      if (errno == ENOLCK || errno == EOPNOTSUPP) break;
      const int err = errno;
      ::close(fd_);
      throw WeightsError(dir.string() + ": cannot lock the weights cache: " + std::strerror(err));
    }
  }
  ~CacheLock() { ::close(fd_); }  // closing releases the lock
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

 private:
  int fd_ = -1;
};

// What to do when the file cannot come over the network.
std::string byHand(const CatalogueEntry& entry, const fs::path& file, const std::string& url) {
  return "; to use it offline, download " + url + " elsewhere and put it at " + file.string() +
         " (its sha256 begins " + entry.sha256_prefix +
         "), or set MRCNN_WEIGHTS_MIRROR to a server that has it";
}

fs::path fromCatalogue(const std::string& name, const ResolveOptions& options) {
  const Catalogue active = options.catalogue ? Catalogue{} : activeCatalogue();
  const Catalogue& catalogue = options.catalogue ? *options.catalogue : active;
  const CatalogueEntry& entry = requireEntry(catalogue, name);
  const fs::path dir = options.cache_dir.empty() ? weightsCacheDir() : options.cache_dir;
  const fs::path file = cachedFile(entry, dir);

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) io::throwWriteError(dir, "cannot create the weights cache", ec.value());
  const CacheLock lock(dir);

  if (fs::exists(file, ec)) {
    const std::string digest = sha256OfFile(file);
    if (digest.compare(0, entry.sha256_prefix.size(), entry.sha256_prefix) != 0) {
      throw WeightsError(name + ": " + file.string() + " has sha256 " + digest +
                         ", not one beginning " + entry.sha256_prefix +
                         ": it is not the published file (damaged, or another file put there); "
                         "delete it to download it again, or put the right file there");
    }
    return file;
  }
  // A partial file left by a process killed while downloading: never used, removed here
  // (under the lock, so no other process is writing it).
  fs::path partial = file;
  partial += ".partial";
  fs::remove(partial, ec);

  const std::string mirror =
      options.mirror ? *options.mirror : mirrorFromEnvironment().value_or("");
  const std::string url = mirroredUrl(entry.url, mirror);
  try {
    downloadFile(url, file, entry.sha256_prefix, options.download);
  } catch (const DownloadError& e) {
    const bool cancelled = e.failure() == DownloadFailure::kCancelled;
    throw DownloadError(e.failure(),
                        name + ": cannot download it: " + e.what() +
                            (cancelled ? std::string() : byHand(entry, file, url)),
                        e.httpStatus());
  }
  return file;
}

}  // namespace

fs::path resolveWeights(const std::string& field, const fs::path& spec_dir,
                        const ResolveOptions& options) {
  if (field.empty()) return {};
  if (isCatalogueName(field)) return fromCatalogue(field, options);
  const fs::path p(field);
  return p.is_absolute() ? p : spec_dir / p;
}

fs::path resolveWeights(const std::string& field, const fs::path& spec_dir,
                        const ProgressFn& progress) {
  ResolveOptions options;
  options.download = DownloadOptions::fromEnvironment();
  options.download.progress = progress;
  return resolveWeights(field, spec_dir, options);
}

}  // namespace mrcnn::weights

#include "weights/download.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>

#include "io/atomic_file.h"
#include "io/transfer_text.h"
#include "io/write_error.h"
#include "weights/sha256.h"

namespace mrcnn::weights {
namespace fs = std::filesystem;

DownloadOptions DownloadOptions::fromEnvironment() {
  DownloadOptions options;
  if (const char* value = std::getenv("MRCNN_WEIGHTS_STALL_SECONDS"); value && *value) {
    char* end = nullptr;
    const long seconds = std::strtol(value, &end, 10);
    if (*end != '\0' || seconds <= 0)
      throw WeightsError(std::string("MRCNN_WEIGHTS_STALL_SECONDS \"") + value +
                         "\" is not a positive number of seconds");
    options.stall_seconds = seconds;
  }
  return options;
}

std::string progressText(const DownloadProgress& p) {
  return io::transferText(p.bytes, p.total, p.bytes_per_second, p.eta_seconds, p.done);
}

namespace {

using Clock = std::chrono::steady_clock;

void initCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      throw WeightsError("libcurl could not be initialised");
  });
}

// The partial file and the running hash of one transfer; the callbacks libcurl calls.
class Transfer {
 public:
  Transfer(const fs::path& partial, const DownloadOptions& options)
      : partial_(partial), options_(options), started_(Clock::now()) {
    fd_ = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) io::throwWriteError(partial, "cannot create the file", errno);
  }
  ~Transfer() {
    if (fd_ >= 0) ::close(fd_);
    if (!kept_) {
      std::error_code ignored;
      fs::remove(partial_, ignored);
    }
  }
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  // An exception must not cross libcurl's C frames: the callbacks keep it, end the transfer,
  // and downloadFile throws it again (the progress callback may write events, and fail).
  static size_t write(char* data, size_t size, size_t count, void* self) {
    auto* t = static_cast<Transfer*>(self);
    try {
      return t->append(data, size * count);
    } catch (...) {
      t->error_ = std::current_exception();
      return 0;
    }
  }
  static int progress(void* self, curl_off_t total, curl_off_t, curl_off_t, curl_off_t) {
    auto* t = static_cast<Transfer*>(self);
    try {
      return t->report(total) ? 0 : 1;
    } catch (...) {
      t->error_ = std::current_exception();
      return 1;
    }
  }
  // What a callback threw, if anything.
  void rethrowCallbackError() const {
    if (error_) std::rethrow_exception(error_);
  }

  int writeErrno() const { return write_errno_; }
  bool cancelled() const { return cancelled_; }
  uint64_t bytes() const { return bytes_; }
  std::string hex() { return hash_.hex(); }

  // The last report, then the file flushed, closed and renamed to `file`.
  void finish(const fs::path& file) {
    sendProgress(/*done=*/true);
    if (::fsync(fd_) != 0) io::throwWriteError(partial_, "cannot flush the file", errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) io::throwWriteError(partial_, "cannot write the file", errno);
    std::error_code ec;
    fs::rename(partial_, file, ec);
    if (ec) io::throwWriteError(file, "cannot rename the download into place", ec.value());
    kept_ = true;
    io::syncPath(file.parent_path(), /*directory=*/true);
  }

 private:
  size_t append(const char* data, size_t size) {
    hash_.update(data, size);
    size_t left = size;
    while (left > 0) {
      const ssize_t n = ::write(fd_, data, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        write_errno_ = n < 0 ? errno : ENOSPC;  // a short write to a regular file: no space
        return 0;                               // libcurl ends the transfer (CURLE_WRITE_ERROR)
      }
      data += n;
      left -= static_cast<size_t>(n);
    }
    bytes_ += size;
    return size;
  }

  bool report(curl_off_t total) {
    if (options_.cancelled && options_.cancelled()) {
      cancelled_ = true;
      return false;
    }
    total_ = total > 0 ? static_cast<uint64_t>(total) : 0;
    const auto t = Clock::now();
    if (reported_ &&
        std::chrono::duration<double>(t - last_report_).count() < options_.progress_interval_s)
      return true;
    sendProgress(/*done=*/false);
    return true;
  }

  void sendProgress(bool done) {
    if (!options_.progress) return;
    last_report_ = Clock::now();
    reported_ = true;
    DownloadProgress p;
    p.bytes = bytes_;
    p.total = done ? bytes_ : total_;
    p.done = done;
    const double seconds = std::chrono::duration<double>(last_report_ - started_).count();
    if (seconds > 0) p.bytes_per_second = static_cast<double>(bytes_) / seconds;
    if (done) {
      p.eta_seconds = 0;
    } else if (p.total > 0 && p.bytes_per_second > 0) {
      p.eta_seconds = static_cast<double>(p.total - std::min(p.total, bytes_)) / p.bytes_per_second;
    }
    options_.progress(p);
  }

  fs::path partial_;
  const DownloadOptions& options_;
  int fd_ = -1;
  bool kept_ = false;
  Sha256 hash_;
  uint64_t bytes_ = 0;
  uint64_t total_ = 0;
  int write_errno_ = 0;
  bool cancelled_ = false;
  Clock::time_point started_;
  Clock::time_point last_report_;
  bool reported_ = false;
  std::exception_ptr error_;
};

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};

// What a libcurl result means for the user. `connected`: the TCP (and TLS) connection was
// made; `had_response`: the server's status line came.
DownloadFailure failureOf(CURLcode code, bool connected, bool had_response) {
  switch (code) {
    case CURLE_HTTP_RETURNED_ERROR:
      return DownloadFailure::kHttpStatus;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
      return had_response ? DownloadFailure::kTruncated : DownloadFailure::kConnection;
    case CURLE_OPERATION_TIMEDOUT:
      // The low-speed limit (after the connection) or the connect timeout (before it).
      return connected ? DownloadFailure::kStalled : DownloadFailure::kConnection;
    case CURLE_ABORTED_BY_CALLBACK:
      return DownloadFailure::kCancelled;
    case CURLE_WRITE_ERROR:
      return DownloadFailure::kWrite;
    default:
      return DownloadFailure::kConnection;
  }
}

}  // namespace

void downloadFile(const std::string& url, const fs::path& file, const std::string& sha256_prefix,
                  const DownloadOptions& options) {
  initCurlOnce();
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) throw DownloadError(DownloadFailure::kConnection, url + ": libcurl cannot start");

  fs::path partial = file;
  partial += ".partial";
  Transfer transfer(partial, options);

  char error_text[CURL_ERROR_SIZE] = {};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);  // 4xx/5xx: an error, not a body to keep
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM: the engine has its own handlers
  curl_easy_setopt(c, CURLOPT_USERAGENT, "mrcnn-workbench");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, options.stall_bytes_per_second);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, options.stall_seconds);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Transfer::write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &Transfer::progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);

  const CURLcode code = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_off_t connect_time = 0;
  curl_easy_getinfo(c, CURLINFO_CONNECT_TIME_T, &connect_time);
  curl_off_t expected = -1;
  curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &expected);

  transfer.rethrowCallbackError();
  if (code != CURLE_OK) {
    if (code == CURLE_WRITE_ERROR && transfer.writeErrno() != 0)
      io::throwWriteError(partial, "cannot write the download", transfer.writeErrno());
    const DownloadFailure failure = failureOf(code, connect_time > 0, status != 0);
    std::string what = error_text[0] ? error_text : curl_easy_strerror(code);
    switch (failure) {
      case DownloadFailure::kHttpStatus:
        what = "the server answered HTTP " + std::to_string(status);
        break;
      case DownloadFailure::kTruncated:
        what = "the connection ended after " + std::to_string(transfer.bytes()) + " of " +
               (expected > 0 ? std::to_string(expected) : std::string("?")) + " bytes (" + what +
               ")";
        break;
      case DownloadFailure::kStalled:
        what = "the transfer stalled: under " + std::to_string(options.stall_bytes_per_second) +
               " bytes/s for " + std::to_string(options.stall_seconds) + " s after " +
               std::to_string(transfer.bytes()) + " bytes (" + what + ")";
        break;
      case DownloadFailure::kCancelled:
        what = "cancelled";
        break;
      default:
        break;
    }
    throw DownloadError(failure, url + ": " + what, status);
  }
  // A server that closes early without having announced a length looks like a complete
  // transfer to libcurl; a length it did announce must have come whole.
  if (expected >= 0 && transfer.bytes() != static_cast<uint64_t>(expected)) {
    throw DownloadError(DownloadFailure::kTruncated, url + ": " + std::to_string(transfer.bytes()) +
                                                         " of " + std::to_string(expected) +
                                                         " bytes arrived");
  }
  const std::string digest = transfer.hex();
  if (digest.compare(0, sha256_prefix.size(), sha256_prefix) != 0) {
    throw DownloadError(DownloadFailure::kHashMismatch,
                        url + ": the file's sha256 is " + digest + ", expected one beginning " +
                            sha256_prefix + " (" + std::to_string(transfer.bytes()) +
                            " bytes): not the published file, or damaged on the way; "
                            "nothing was kept");
  }
  transfer.finish(file);
}

}  // namespace mrcnn::weights

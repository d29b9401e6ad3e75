// One file over HTTP(S) (libcurl), written whole or not at all: the bytes go to
// "<file>.partial" and are hashed as they arrive; only a complete body whose SHA-256 starts
// with the expected prefix is renamed to <file>. Any failure removes the partial file, so
// neither a truncated nor a corrupt download is ever found under the final name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "weights/catalogue.h"

namespace mrcnn::weights {

struct DownloadProgress {
  uint64_t bytes = 0;           // received so far
  uint64_t total = 0;           // the body's size; 0 when the server does not say
  double bytes_per_second = 0;  // the mean since the transfer began
  double eta_seconds = -1;      // -1 when unknown (no total, no rate yet)
  bool done = false;            // the last report: the whole body arrived
};
// "12.3 MB of 97.8 MB, 5.1 MB/s, 17 s left" (what is known of it): one line for a terminal
// bar or a status text.
std::string progressText(const DownloadProgress& progress);

// Called as the bytes arrive (at most every DownloadOptions::progress_interval_s) and once
// with done when the body is complete, on the calling thread.
using ProgressFn = std::function<void(const DownloadProgress&)>;

enum class DownloadFailure {
  kConnection,    // no connection (offline, refused, a name that does not resolve, TLS)
  kHttpStatus,    // the server answered with an error status (404...)
  kTruncated,     // the connection ended before the whole body came
  kStalled,       // no progress for DownloadOptions::stall_seconds
  kHashMismatch,  // the body's SHA-256 is not the expected one
  kCancelled,     // DownloadOptions::cancelled said so
  kWrite,         // the partial file could not be written (not a full disk: io::DiskFullError)
};

class DownloadError : public WeightsError {
 public:
  DownloadError(DownloadFailure failure, const std::string& message, long http_status = 0)
      : WeightsError(message), failure_(failure), http_status_(http_status) {}
  DownloadFailure failure() const { return failure_; }
  long httpStatus() const { return http_status_; }

 private:
  DownloadFailure failure_;
  long http_status_;
};

struct DownloadOptions {
  ProgressFn progress;
  // Polled while the transfer runs (a stop signal): true ends it with kCancelled.
  std::function<bool()> cancelled;
  long connect_timeout_s = 30;
  // A transfer slower than stall_bytes_per_second for stall_seconds fails (kStalled): a
  // server that stops sending (or never answers) ends in bounded time, while a slow but
  // moving line is left alone.
  long stall_seconds = 60;
  long stall_bytes_per_second = 1024;
  double progress_interval_s = 0.25;

  // The defaults, with MRCNN_WEIGHTS_STALL_SECONDS (a positive integer) replacing
  // stall_seconds where set. Throws WeightsError when it is set to something else.
  static DownloadOptions fromEnvironment();
};

// Downloads `url` into `file` (its folder must exist) as described above. Throws
// DownloadError "<url>: <what happened>" (the partial file removed), or io::DiskFullError
// when the disk fills up.
void downloadFile(const std::string& url, const std::filesystem::path& file,
                  const std::string& sha256_prefix, const DownloadOptions& options = {});

}  // namespace mrcnn::weights

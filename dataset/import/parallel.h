// Runs fn(i) for i in [0, n) on `threads` threads, the calling thread among them, and calls
// progress(done) from the calling thread now and then. An exception thrown by fn for one
// item does not stop the others; the one of the lowest index is rethrown at the end, so the
// error a user sees does not depend on thread timing.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mrcnn::dataset::import {

inline void parallelFor(size_t n, unsigned threads, const std::function<void(size_t)>& fn,
                        const std::function<void(size_t)>& progress = {}) {
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::mutex error_mutex;
  size_t error_index = n;
  std::exception_ptr error;
  auto work = [&](bool caller) {
    size_t reported = 0;
    for (size_t i = next++; i < n; i = next++) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (i < error_index) {
          error_index = i;
          error = std::current_exception();
        }
      }
      const size_t d = ++done;
      // Every 1000 items: often enough for a progress bar, rare enough to cost nothing.
      if (caller && progress && d - reported >= 1000) {
        progress(d);
        reported = d;
      }
    }
  };
  const unsigned extra = std::min<size_t>(std::max(1u, threads), std::max<size_t>(n, 1)) - 1;
  std::vector<std::thread> pool;
  pool.reserve(extra);
  for (unsigned t = 0; t < extra; ++t) pool.emplace_back(work, false);
  work(true);
  for (auto& t : pool) t.join();
  if (progress) progress(n);
  if (error) std::rethrow_exception(error);
}

}  // namespace mrcnn::dataset::import

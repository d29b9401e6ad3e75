// How often a stretch of code makes the host wait for a GPU (a `.item()`, a `nonzero`, a
// copy to the CPU, a size that depends on the data), and from where: LibTorch's CUDA sync
// debug mode set to warn, its warnings caught (the others passed on) and each one's call
// stack kept as module + offset, so that the build machine can name the lines afterwards
// (scripts/symbolize_syncs.py, with addr2line on the same binary). Used by
// `--task benchmark --count-syncs` and scripts/gpu_check.sh (issue: no host syncs in a step).
//
// Without CUDA in LibTorch it counts nothing (available() is false); the counting and grouping
// themselves do not need a GPU: any code that calls c10's sync hook while a counter is on is
// counted, which is how the tests check it on a CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mrcnn::engine {

struct SyncSite {
  // The call stack, innermost first: "module+0xoffset" or, where the dynamic symbol table
  // names it, "module+0xoffset symbol". LibTorch's own frames included.
  std::vector<std::string> frames;
  size_t count = 0;
};

struct SyncCount {
  size_t total = 0;
  std::vector<SyncSite> sites;  // the distinct stacks, most frequent first
  // {"total": N, "sites": [{"count": n, "frames": [...]}, ...]}
  std::string json() const;
};

class SyncCounter {
 public:
  // Whether LibTorch here can count (it was built with CUDA).
  static bool available();

  // Starts counting when `on` (and available()); otherwise does nothing.
  explicit SyncCounter(bool on);
  ~SyncCounter();
  SyncCounter(const SyncCounter&) = delete;
  SyncCounter& operator=(const SyncCounter&) = delete;

  bool active() const;
  // Stops counting (the debug mode and the warning handler as they were) and returns what
  // was counted; an empty count when it was not on.
  SyncCount stop();

  class Handler;  // the warning handler (sync_counter.cpp)

 private:
  std::unique_ptr<Handler> handler_;
};

}  // namespace mrcnn::engine

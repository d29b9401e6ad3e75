// Times loadCoco on one file and reports the process's peak memory, for
// scripts/bench_coco_load.py. Output, one line:
//   seconds=<wall time of loadCoco> peak_rss_kb=<VmHWM> images=<n> annotations=<n> warnings=<n>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "dataset/coco/coco.h"

namespace {

// The high-water mark of the resident set: what the kernel had to find for us at the worst
// moment, file buffers and allocator slack included.
long peakRssKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: bench_coco_load FILE.json [THREADS]\n");
    return 2;
  }
  mrcnn::dataset::CocoLoadOptions options;
  if (argc == 3) options.threads = static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10));
  try {
    const auto start = std::chrono::steady_clock::now();
    const mrcnn::dataset::CocoDataset dataset = mrcnn::dataset::loadCoco(argv[1], options);
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    std::printf("seconds=%.3f peak_rss_kb=%ld images=%zu annotations=%zu warnings=%llu\n",
                elapsed.count(), peakRssKb(), dataset.images().size(), dataset.annotations().size(),
                static_cast<unsigned long long>(dataset.warningCount()));
  } catch (const mrcnn::dataset::CocoError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}

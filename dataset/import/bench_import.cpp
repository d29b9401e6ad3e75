// Runs one import and prints its wall time as the last line ("seconds 1.234"): the driver of
// scripts/bench_import.py. Usage: bench_import FORMAT INPUT OUTPUT_DIR [THREADS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dataset/import/import.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s FORMAT INPUT OUTPUT_DIR [THREADS]\n", argv[0]);
    return 2;
  }
  mrcnn::dataset::import::ImportOptions options;
  options.format = argv[1];
  options.input = argv[2];
  options.output_dir = argv[3];
  if (argc > 4) options.threads = static_cast<unsigned>(std::strtoul(argv[4], nullptr, 10));
  try {
    const auto started = std::chrono::steady_clock::now();
    const auto summary = mrcnn::dataset::import::importDataset(options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    uint64_t images = 0, instances = 0;
    for (const auto& [name, counts] : summary.splits) {
      images += counts.images;
      instances += counts.instances;
    }
    std::printf("images %llu instances %llu\nseconds %.3f\n", static_cast<unsigned long long>(images),
                static_cast<unsigned long long>(instances), seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}

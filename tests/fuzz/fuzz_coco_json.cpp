// Any bytes as a COCO instances file: loadCoco must either return a dataset or throw
// CocoError; never crash, hang or read out of bounds. Every mask it accepts is then built
// through annotationRle, which may throw std::invalid_argument only.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "dataset/coco/coco.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = ::memfd_create("coco.json", 0);
  if (fd < 0) return 0;
  size_t written = 0;
  while (written < size) {
    const ssize_t n = ::write(fd, data + written, size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  for (unsigned threads : {1u, 2u}) {
    try {
      mrcnn::dataset::CocoLoadOptions options;
      options.threads = threads;
      const auto dataset = mrcnn::dataset::loadCoco(path, options);
      for (const auto& a : dataset.annotations()) {
        try {
          const auto& image = dataset.images()[a.image_index];
          // Keep masks small enough for the fuzzer: huge sizes are legal but slow.
          if (static_cast<uint64_t>(image.width) * image.height > (1u << 20)) continue;
          (void)mrcnn::dataset::annotationRle(dataset, a);
        } catch (const std::invalid_argument&) {
        }
      }
    } catch (const mrcnn::dataset::CocoError&) {
    }
  }
  ::close(fd);
  return 0;
}

// Any bytes as polygons (doubles, possibly NaN, huge, outside the image) rasterised at a
// size from the first bytes: it must give a mask of that size inside the image or throw
// std::invalid_argument.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "dataset/mask/rle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const uint32_t h = data[0] % 128, w = data[1] % 128;
  const size_t polygons = 1 + data[2] % 3;
  data += 3;
  size -= 3;
  std::vector<mrcnn::dataset::Polygon> list(polygons);
  for (size_t i = 0; size >= sizeof(double); ++i) {
    double v;
    std::memcpy(&v, data, sizeof v);
    // Mostly image-scale coordinates, so that rasterisation is exercised, not only rejection.
    if (i % 4 != 3 && std::isfinite(v)) v = std::fmod(v, 250.0) - 50;
    list[i % polygons].push_back(v);
    data += sizeof(double);
    size -= sizeof(double);
  }
  try {
    const mrcnn::dataset::Rle rle = mrcnn::dataset::rleFromPolygons(list, h, w);
    uint64_t total = 0;
    for (uint32_t c : rle.counts) total += c;
    // On a zero-width image pycocotools' rasteriser wraps its last column around (w - 1 in
    // size_t) and yields runs past the mask; we keep its output bit for bit (the COCO reader
    // refuses images without a positive size, so none reaches it), and decode refuses it.
    if (rle.h != h || rle.w != w) __builtin_trap();
    if (w > 0 && total != static_cast<uint64_t>(h) * w) __builtin_trap();
  } catch (const std::invalid_argument&) {
  }
  return 0;
}

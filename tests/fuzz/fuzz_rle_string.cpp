// Any bytes as a compressed RLE string with a size taken from the first four bytes: it must
// decode or throw std::invalid_argument; what decodes must survive area, toBbox, decode and
// a round trip through the encoder.
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "dataset/mask/rle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const uint32_t h = data[0] | (static_cast<uint32_t>(data[1] & 0x3) << 8);
  const uint32_t w = data[2] | (static_cast<uint32_t>(data[3] & 0x3) << 8);
  const std::string_view counts(reinterpret_cast<const char*>(data + 4), size - 4);
  try {
    const mrcnn::dataset::Rle rle = mrcnn::dataset::fromCompressedString(counts, h, w);
    (void)mrcnn::dataset::area(rle);
    (void)mrcnn::dataset::toBbox(rle);
    const std::string again = mrcnn::dataset::toCompressedString(rle);
    try {
      const cv::Mat mask = mrcnn::dataset::decodeMask(rle);
      const mrcnn::dataset::Rle back = mrcnn::dataset::encodeMask(mask);
      if (mrcnn::dataset::area(back) != mrcnn::dataset::area(rle)) __builtin_trap();
    } catch (const std::invalid_argument&) {
      // runs that do not add up to h * w: decode refuses them
    }
    (void)again;
  } catch (const std::invalid_argument&) {
  }
  return 0;
}

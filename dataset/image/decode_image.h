// Every image the product reads goes through here (inference's files, the training and
// evaluation loader's samples): bytes to an 8-bit BGR picture in its stored pixel grid (EXIF
// orientation is not applied: COCO's annotations, PIL and torchvision do not apply it), or
// the reason it cannot be used. An empty file, a file that is not an image, a truncated
// JPEG or PNG, a decoder's exception and a header claiming more pixels than the limit (a
// decompression bomb) all end the same way: a problem to report naming the file, never an
// exception, so that the caller skips that image and goes on.
#pragma once

#include <cstdint>
#include <filesystem>
#include <opencv2/core/mat.hpp>
#include <span>
#include <string>

namespace mrcnn::dataset {

// 2^28 pixels (268 megapixels, 805 MB decoded): more than any camera or scanned slide a
// detector is fed whole; OpenCV's own limit is 2^30.
inline constexpr uint64_t kMaxImagePixels = uint64_t{1} << 28;

struct DecodeOptions {
  uint64_t max_pixels = kMaxImagePixels;
};

struct DecodedImage {
  cv::Mat bgr;          // CV_8UC3; empty when not ok
  std::string problem;  // why not: "truncated JPEG (no end marker)", ...; empty when ok
  bool ok() const { return problem.empty(); }
};

DecodedImage decodeImage(std::span<const uint8_t> bytes, const DecodeOptions& options = {});

// Reads the file and decodes it; a file that cannot be read is a problem too ("cannot read:
// No such file or directory"). The problem does not repeat the path: the caller names it.
DecodedImage readImageFile(const std::filesystem::path& path, const DecodeOptions& options = {});

}  // namespace mrcnn::dataset

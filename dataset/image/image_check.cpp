// The full image check: the structure (image_structure.cpp) and a decode with OpenCV.
#include "dataset/image/image_check.h"

#include <opencv2/core/mat.hpp>
#include <opencv2/imgcodecs.hpp>

namespace mrcnn::dataset {

ImageCheck checkImage(std::span<const uint8_t> bytes) {
  ImageCheck check = checkStructure(bytes);
  if (!check.ok) return check;
  check.ok = false;
  ImageHeader& header = check.header;
  const int flags = header.format == ImageFormat::kJpeg
                        ? cv::IMREAD_REDUCED_COLOR_8 | cv::IMREAD_IGNORE_ORIENTATION
                        : cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION;
  cv::Mat image;
  try {
    const cv::Mat raw(1, static_cast<int>(bytes.size()), CV_8UC1,
                      const_cast<uint8_t*>(bytes.data()));
    image = cv::imdecode(raw, flags);
  } catch (const cv::Exception& e) {
    check.problem = std::string("does not decode: ") + e.what();
    return check;
  }
  if (image.empty()) {
    check.problem = header.format == ImageFormat::kUnknown ? "not an image OpenCV can decode"
                                                           : "does not decode";
    return check;
  }
  if (header.format == ImageFormat::kUnknown) {
    header.width = static_cast<uint32_t>(image.cols);
    header.height = static_cast<uint32_t>(image.rows);
  } else if (header.format == ImageFormat::kPng &&
             (static_cast<uint32_t>(image.cols) != header.width ||
              static_cast<uint32_t>(image.rows) != header.height)) {
    check.problem = "decodes to a size other than its header's";
    return check;
  }
  check.ok = true;
  return check;
}

}  // namespace mrcnn::dataset

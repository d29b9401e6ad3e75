// The COCO mask API in C++: run-length encoded binary masks with the exact semantics of
// pycocotools (common/maskApi.c), so that areas, boxes and compressed strings we compute are
// the ones pycocotools computes from the same json. Layout conventions:
//  - runs are over the mask in column-major order (x outer, y inner), like COCO's files;
//  - the first run counts zeros (it is 0 when the first pixel is set), runs then alternate;
//  - cv::Mat masks are ordinary row-major CV_8UC1 images, 0 = background, anything else =
//    foreground; the functions transpose as needed.
#pragma once

#include <array>
#include <cstdint>
#include <opencv2/core/mat.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mrcnn::dataset {

struct Rle {
  uint32_t h = 0;
  uint32_t w = 0;
  std::vector<uint32_t> counts;  // column-major runs, starting with a run of zeros

  friend bool operator==(const Rle&, const Rle&) = default;
};

// A polygon as COCO stores it: x0, y0, x1, y1, ... in pixel coordinates.
using Polygon = std::vector<double>;

// Encodes a row-major CV_8UC1 mask.
Rle encodeMask(const cv::Mat& mask);
// Encodes raw bytes laid out column-major (pixel (x, y) at data[x * h + y]), like
// pycocotools' encode on a Fortran-ordered array. Nonzero = foreground.
Rle encodeColumnMajor(std::span<const uint8_t> data, uint32_t h, uint32_t w);

// Decodes to a row-major CV_8UC1 mask of 0/1. Throws std::invalid_argument when the runs do
// not add up to h * w (a corrupt file must not read or write out of bounds).
cv::Mat decodeMask(const Rle& rle);

// Sum of the foreground runs (pycocotools' maskUtils.area).
uint64_t area(const Rle& rle);
// [x, y, w, h] of the foreground, all 0 for an empty mask (pycocotools' maskUtils.toBbox).
std::array<double, 4> toBbox(const Rle& rle);

// Rasterises one polygon exactly like pycocotools' rleFrPoly (frPyObjects on a polygon): the
// boundary is walked on a 5x upsampled grid and sampled back at pixel centres, so the result
// differs from cv::fillPoly on edges. An odd trailing coordinate is ignored, as there.
Rle rleFromPolygon(std::span<const double> xy, uint32_t h, uint32_t w);
// The union of the polygons' masks: what pycocotools' annToRLE gives for a polygon list.
Rle rleFromPolygons(std::span<const Polygon> polygons, uint32_t h, uint32_t w);

// Union (or intersection) of masks of the same size; an empty span gives an empty Rle.
// Throws std::invalid_argument on differing sizes. The result is canonical: no zero-length
// runs except a leading one, like pycocotools' rleMerge on canonical inputs.
Rle merge(std::span<const Rle> rles, bool intersect = false);

// pycocotools' compressed "counts" string: a LEB128-like code of 5 bits per character
// (ASCII 48..111); from the fourth run on, the difference to the run two before is coded.
std::string toCompressedString(const Rle& rle);
// Inverse of toCompressedString. Throws std::invalid_argument on characters outside the
// alphabet or a truncated last number.
Rle fromCompressedString(std::string_view counts, uint32_t h, uint32_t w);

}  // namespace mrcnn::dataset

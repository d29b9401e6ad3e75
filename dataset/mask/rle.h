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
// runs except a leading one, like pycocotools' rleMerge on canonical inputs. (On inputs
// with zero-length runs inside, pycocotools keeps some of them in its result, or stops early
// and truncates it when two inputs have one at the same pixel; on masks of different sizes
// it returns a 0x0 mask.)
Rle merge(std::span<const Rle> rles, bool intersect = false);

// pycocotools' compressed "counts" string: a LEB128-like code of 5 bits per character
// (ASCII 48..111); from the fourth run on, the difference to the run two before is coded.
// (pycocotools' encoder has room for 6 characters per run: a mask whose differences reach
// 2^29 often enough to need more overflows its heap buffer; we have no such limit.)
std::string toCompressedString(const Rle& rle);
// Inverse of toCompressedString. Throws std::invalid_argument on characters outside the
// alphabet or a truncated last number.
// Where pycocotools differs (it validates nothing): it reads past the end of a truncated
// string and takes any byte as a digit; from the 13th character of one number on we throw,
// it shifts bits out. And on x86-64 it sign-extends a negative number of 7 or more
// characters in 32-bit int arithmetic, which garbles it: such numbers appear only in masks
// of more than 2^29 pixels, where its own decode(encode(m)) != m; we decode them exactly.
Rle fromCompressedString(std::string_view counts, uint32_t h, uint32_t w);

// Decodes to raw bytes laid out column-major (pixel (x, y) at [x * h + y]) with values 0/1,
// like pycocotools' decode; throws like decodeMask.
std::vector<uint8_t> decodeColumnMajor(const Rle& rle);

// ---- The other conversions of pycocotools' frPyObjects ----

// A box [x, y, w, h], 0-indexed: [0, 0, 1, 1] covers the first pixel.
using Box = std::array<double, 4>;

// The mask of a box as pycocotools' frBbox makes it: the polygon (x, y), (x, y + h),
// (x + w, y + h), (x + w, y) through rleFromPolygon, so fractional edges round its way and a
// box of zero or negative size gives an empty mask.
Rle rleFromBbox(const Box& box, uint32_t h, uint32_t w);
// frPyObjects on an N x 4 numpy array: one mask per box.
std::vector<Rle> rlesFromBboxes(std::span<const Box> boxes, uint32_t h, uint32_t w);

// frPyObjects on {"size": [h, w], "counts": [c0, c1, ...]}: an uncompressed RLE, as COCO
// stores crowd regions. h and w are the object's own "size" (COCO.annToRLE passes the image
// size too, but pycocotools ignores it here). The counts go through numpy's uint32
// conversion (out of range raises OverflowError there, throws std::invalid_argument here)
// and then the compressed string and back, which keeps them as they are: zero-length runs
// stay, and runs that do not add up to h * w are not checked (decode, merge and iou do).
// (pycocotools' way back garbles a run 2^29 or more shorter than the one two before, see
// fromCompressedString; we keep it.)
Rle rleFromUncompressed(std::span<const int64_t> counts, uint32_t h, uint32_t w);

// frPyObjects on a list of number lists (a COCO "segmentation" list), one mask per list.
// pycocotools decides what the lists are from the first one alone:
//  - more than 4 numbers: all are polygons, later ones with fewer than 3 points included
//    (they rasterise to an empty mask); an odd trailing number is ignored;
//  - exactly 4 numbers: all are taken for [x, y, w, h] boxes (the pitfall: a first polygon
//    of two points), and pycocotools 2.0.11 then raises a TypeError (its frBbox wants a
//    numpy array). We throw std::invalid_argument; pass boxes to rlesFromBboxes instead;
//  - fewer than 4 numbers, or an empty list: pycocotools raises, we throw.
// A single flat list (one polygon or one box) fails in 2.0.11's frPyObjects too: it asks
// for the length of the first number. Use rleFromPolygon or rleFromBbox.
std::vector<Rle> rlesFromSegmentationList(std::span<const Polygon> lists, uint32_t h, uint32_t w);
// COCO.annToRLE on a list segmentation: the merge (union) of rlesFromSegmentationList.
Rle rleFromSegmentationList(std::span<const Polygon> lists, uint32_t h, uint32_t w);

// ---- Intersection over union (pycocotools' maskUtils.iou) ----

// A detections x ground truths matrix, as pycocotools' iou returns it (rows = detections,
// columns = ground truths), stored row-major: values[d * cols + g]. With no detections or
// no ground truths, values is empty (pycocotools returns []).
struct IouMatrix {
  size_t rows = 0;
  size_t cols = 0;
  std::vector<double> values;

  double at(size_t d, size_t g) const { return values[d * cols + g]; }
};

// Mask IoU with pycocotools' rleIou semantics, to the bit:
//  - a pair whose boxes (toBbox) do not overlap is 0 without looking at the runs;
//  - a pair of masks of different sizes whose boxes overlap is -1;
//  - no common pixel gives 0, else intersection / union, or intersection / area(dt) when
//    iscrowd[g] is nonzero (a detection may match any part of a crowd region);
//  - counts are summed in uint32 and divided in double, as there; zero-length runs inside
//    a mask are walked the way pycocotools walks them (it stops early when both masks reach
//    one at the same pixel, and so do we).
// iscrowd holds one flag per ground truth (pycocotools converts to uint8: 0 = not crowd).
// Throws std::invalid_argument when iscrowd.size() != gt.size() or a mask's runs do not add
// up to h * w (pycocotools would loop forever or read out of bounds on such a pair). A mask
// 0 pixels high has an all-zero box here; pycocotools' toBbox divides by zero on it if it
// has two runs or more.
// Pairs of canonical masks (no zero-length run but the first) take a faster route that
// counts the same pixels: their intersection within the columns both boxes share.
IouMatrix iou(std::span<const Rle> dt, std::span<const Rle> gt, std::span<const uint8_t> iscrowd);
// Box IoU with pycocotools' bbIou semantics and double arithmetic: boxes that overlap by
// zero or less (zero or negative sizes) give 0; a crowd ground truth divides by the
// detection's area. Throws std::invalid_argument when iscrowd.size() != gt.size().
IouMatrix iou(std::span<const Box> dt, std::span<const Box> gt, std::span<const uint8_t> iscrowd);
// The same, writing into out and reusing its storage: for the evaluation's hot loop.
void iou(std::span<const Rle> dt, std::span<const Rle> gt, std::span<const uint8_t> iscrowd,
         IouMatrix& out);
// The same on masks held elsewhere, without copying them into one array first.
void iou(std::span<const Rle* const> dt, std::span<const Rle* const> gt,
         std::span<const uint8_t> iscrowd, IouMatrix& out);
void iou(std::span<const Box> dt, std::span<const Box> gt, std::span<const uint8_t> iscrowd,
         IouMatrix& out);

}  // namespace mrcnn::dataset

// COCO instances json in memory: images, categories, annotations with their segmentations,
// the indexes the data loader needs, and the loader that reads a file of COCO train2017's size
// (448 MB) in a second or two with memory close to the file's size.
//
// Layout: every table is a flat vector of small records. Polygon coordinates, uncompressed RLE
// counts and strings live in append-only block arenas owned by the dataset; records point into
// them with spans, so nothing is allocated per polygon and the dataset is move-only.
//
// What the loader rejects and what it forgives:
//  - CocoError (thrown): the file cannot be read, is not JSON, or a value has the wrong JSON
//    type where the structure fixes one (the top level is not an object; `images`,
//    `annotations` or `categories` is not an array of objects; an id is not an integer; a bbox
//    or polygon holds a string...). The message names the file, the byte offset of the value
//    at fault and its key path: `f.json: byte 1234567: annotations[5012].bbox[2]: expected a
//    number, got a string`.
//  - CocoWarning (collected, loading goes on): data that is well-typed but wrong. Records that
//    cannot be represented are skipped (an annotation without a usable bbox, of an unknown
//    image or category; an image without id, file name or a positive size; the later of two
//    images or categories with the same id); the rest are kept as they are (a duplicate
//    annotation id, a crowd region given as polygons, a segmentation of an unknown shape,
//    which is then kSegmentationNone).
//  - Unknown keys are ignored anywhere; their values are only checked for balanced brackets.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "dataset/mask/rle.h"

namespace mrcnn::dataset {

enum class SegmentationKind : uint8_t {
  kNone,             // no segmentation, or one the loader could not read (see the warnings)
  kPolygons,         // [[x0, y0, x1, y1, ...], ...]
  kUncompressedRle,  // {"size": [h, w], "counts": [n0, n1, ...]}: COCO's crowd regions
  kCompressedRle,    // {"size": [h, w], "counts": "string"}
};

struct CocoImage {
  int64_t id = 0;
  uint32_t width = 0;
  uint32_t height = 0;
  std::string_view file_name;  // into the dataset's string arena
};

struct CocoCategory {
  int64_t id = 0;
  std::string name;
  std::string supercategory;  // empty when the file has none
};

struct CocoAnnotation {
  int64_t id = 0;
  int64_t image_id = 0;
  int64_t category_id = 0;
  std::array<double, 4> bbox{};  // x, y, w, h as in the file
  double area = 0;               // NaN when the file has none (with a warning)
  uint32_t image_index = 0;      // into CocoDataset::images()
  uint32_t label = 0;            // contiguous 1..K, see CocoDataset::categories()
  // kPolygons: polygons [segment_begin, segment_begin + segment_count) of polygonTable();
  // RLE kinds: record segment_begin of rleTable() (segment_count is 1).
  uint32_t segment_begin = 0;
  uint32_t segment_count = 0;
  SegmentationKind segmentation = SegmentationKind::kNone;
  bool iscrowd = false;
  int8_t ignore = -1;  // the `ignore` flag some COCO-style files carry; -1 when absent
};

// One RLE segmentation with its own size, as the file gives it.
struct CocoRle {
  uint32_t height = 0;
  uint32_t width = 0;
  std::span<const uint32_t> counts;  // kUncompressedRle
  std::string_view compressed;       // kCompressedRle: pycocotools' counts string
};

enum class CocoWarningCode : uint8_t {
  kMissingSection,         // no `images`, `annotations` or `categories` key
  kDuplicateKey,           // a second top-level `images`/`annotations`/`categories` (ignored)
  kBadImage,               // an image without id, file_name or positive width/height: skipped
  kDuplicateImageId,       // the later image is skipped
  kBadCategory,            // a category without id: skipped
  kDuplicateCategoryId,    // the later category is skipped
  kMissingField,           // an annotation without id, image_id, category_id (skipped) or area
  kBadBbox,                // missing, not 4 values, negative width/height: annotation skipped
  kUnknownImageId,         // annotation skipped
  kUnknownCategoryId,      // annotation skipped
  kDuplicateAnnotationId,  // both are kept
  kBadSegmentation,        // not polygons nor RLE, or an RLE without size/counts: kNone
  kDegeneratePolygon,      // fewer than 3 points or an odd number of coordinates: kept
  kCrowdWithoutRle,        // iscrowd = 1 with polygons or no segmentation: kept
  kRleSizeMismatch,        // RLE size differs from the image's size: kept (masks use its size)
};

// snake_case name of a code, as events and reports print it ("unknown_image_id").
std::string_view warningName(CocoWarningCode code);

struct CocoWarning {
  CocoWarningCode code{};
  std::string message;
  std::optional<int64_t> image_id;
  std::optional<int64_t> annotation_id;
  uint64_t byte_offset = 0;  // where the value at fault, or its image/annotation, starts
  std::string key_path;      // e.g. "annotations[17].bbox"
};

class CocoError : public std::runtime_error {
 public:
  // A problem at a place in the file. what(): "<file>: byte <offset>: <key path>: <reason>".
  CocoError(std::string file, uint64_t byte_offset, std::string key_path, std::string reason);
  // A problem with the file as a whole (cannot open, cannot read). what(): "<file>: <reason>".
  CocoError(std::string file, std::string reason);

  const std::string& file() const { return file_; }
  std::optional<uint64_t> byteOffset() const { return byte_offset_; }
  const std::string& keyPath() const { return key_path_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string file_;
  std::optional<uint64_t> byte_offset_;
  std::string key_path_;
  std::string reason_;
};

namespace coco_detail {
class DatasetBuilder;
struct Storage;  // the arenas and id indexes (coco_storage.h)
}  // namespace coco_detail

class CocoDataset {
 public:
  CocoDataset();
  ~CocoDataset();
  CocoDataset(CocoDataset&&) noexcept;
  CocoDataset& operator=(CocoDataset&&) noexcept;

  // In file order, skipped records left out.
  std::span<const CocoImage> images() const { return images_; }
  std::span<const CocoAnnotation> annotations() const { return annotations_; }
  // In ascending id order: category i has label i + 1 (0 is the background).
  std::span<const CocoCategory> categories() const { return categories_; }

  std::optional<uint32_t> imageIndex(int64_t image_id) const;
  // Indices into annotations() of the image's annotations, in file order.
  std::span<const uint32_t> annotationsOfImage(uint32_t image_index) const {
    return std::span<const uint32_t>(image_annotations_)
        .subspan(image_offsets_[image_index],
                 image_offsets_[image_index + 1] - image_offsets_[image_index]);
  }
  // The contiguous label of a category id, 0 when there is no such category.
  uint32_t label(int64_t category_id) const;

  std::span<const std::span<const double>> polygons(const CocoAnnotation& a) const {
    if (a.segmentation != SegmentationKind::kPolygons) return {};
    return std::span(polygons_).subspan(a.segment_begin, a.segment_count);
  }
  const CocoRle& rle(const CocoAnnotation& a) const { return rles_[a.segment_begin]; }
  std::span<const std::span<const double>> polygonTable() const { return polygons_; }
  std::span<const CocoRle> rleTable() const { return rles_; }

  // The first CocoLoadOptions::max_warnings warnings found, sorted by byte offset;
  // warningCount() counts all of them.
  std::span<const CocoWarning> warnings() const { return warnings_; }
  uint64_t warningCount() const { return warning_count_; }

 private:
  friend class coco_detail::DatasetBuilder;
  std::vector<CocoImage> images_;
  std::vector<CocoCategory> categories_;
  std::vector<CocoAnnotation> annotations_;
  std::vector<uint32_t> image_offsets_{0};  // CSR: image i owns image_annotations_[o[i], o[i+1])
  std::vector<uint32_t> image_annotations_;
  std::vector<std::span<const double>> polygons_;
  std::vector<CocoRle> rles_;
  std::vector<CocoWarning> warnings_;
  uint64_t warning_count_ = 0;
  std::unique_ptr<coco_detail::Storage> storage_;
};

struct CocoLoadOptions {
  // Threads that parse. 1: the calling thread reads and parses. n > 1: n parsing threads,
  // while the calling thread reads the file and cuts it into batches (light work: it shares
  // a core well). 0: the machine's hardware concurrency.
  unsigned threads = 0;
  size_t max_warnings = 10000;  // records kept; the count goes on
};

// Reads a COCO instances json. Throws CocoError (see the top of this file).
CocoDataset loadCoco(const std::filesystem::path& path, const CocoLoadOptions& options = {});

// The annotation's mask as pycocotools' COCO.annToRLE gives it: polygons rasterised at the
// image's size and merged; an RLE at its own size (uncompressed counts taken as they are,
// a compressed string decoded). kNone gives an empty mask of the image's size.
// Known difference: pycocotools treats a polygon list whose first polygon has exactly 4
// coordinates as boxes (frBbox); here it stays a (degenerate) polygon, with a warning at load.
// Throws std::invalid_argument for a compressed string that does not decode.
Rle annotationRle(const CocoDataset& dataset, const CocoAnnotation& annotation);

}  // namespace mrcnn::dataset

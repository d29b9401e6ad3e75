// CocoDataset's look-ups, the error and warning types, and the annotation -> Rle helper.
#include <utility>

#include "dataset/coco/coco.h"
#include "dataset/coco/coco_storage.h"

namespace mrcnn::dataset {

CocoError::CocoError(std::string file, uint64_t byte_offset, std::string key_path,
                     std::string reason)
    : std::runtime_error(file + ": byte " + std::to_string(byte_offset) + ": " +
                         (key_path.empty() ? std::string() : key_path + ": ") + reason),
      file_(std::move(file)),
      byte_offset_(byte_offset),
      key_path_(std::move(key_path)),
      reason_(std::move(reason)) {}

CocoError::CocoError(std::string file, std::string reason)
    : std::runtime_error(file + ": " + reason),
      file_(std::move(file)),
      reason_(std::move(reason)) {}

std::string_view warningName(CocoWarningCode code) {
  switch (code) {
    case CocoWarningCode::kMissingSection:
      return "missing_section";
    case CocoWarningCode::kDuplicateKey:
      return "duplicate_key";
    case CocoWarningCode::kBadImage:
      return "bad_image";
    case CocoWarningCode::kDuplicateImageId:
      return "duplicate_image_id";
    case CocoWarningCode::kBadCategory:
      return "bad_category";
    case CocoWarningCode::kDuplicateCategoryId:
      return "duplicate_category_id";
    case CocoWarningCode::kMissingField:
      return "missing_field";
    case CocoWarningCode::kBadBbox:
      return "bad_bbox";
    case CocoWarningCode::kUnknownImageId:
      return "unknown_image_id";
    case CocoWarningCode::kUnknownCategoryId:
      return "unknown_category_id";
    case CocoWarningCode::kDuplicateAnnotationId:
      return "duplicate_annotation_id";
    case CocoWarningCode::kBadSegmentation:
      return "bad_segmentation";
    case CocoWarningCode::kDegeneratePolygon:
      return "degenerate_polygon";
    case CocoWarningCode::kCrowdWithoutRle:
      return "crowd_without_rle";
    case CocoWarningCode::kRleSizeMismatch:
      return "rle_size_mismatch";
  }
  return "unknown";
}

CocoDataset::CocoDataset() : storage_(std::make_unique<coco_detail::Storage>()) {}
CocoDataset::~CocoDataset() = default;
CocoDataset::CocoDataset(CocoDataset&&) noexcept = default;
CocoDataset& CocoDataset::operator=(CocoDataset&&) noexcept = default;

std::optional<uint32_t> CocoDataset::imageIndex(int64_t image_id) const {
  return storage_->images.find(image_id);
}

uint32_t CocoDataset::label(int64_t category_id) const {
  const std::optional<uint32_t> index = storage_->categories.find(category_id);
  return index ? *index + 1 : 0;
}

Rle annotationRle(const CocoDataset& dataset, const CocoAnnotation& annotation) {
  const CocoImage& image = dataset.images()[annotation.image_index];
  switch (annotation.segmentation) {
    case SegmentationKind::kPolygons: {
      // rleFromPolygons without copying the coordinates out of the arena: each polygon
      // rasterised at the image's size, then merged (one polygon is returned as it is).
      std::vector<Rle> parts;
      for (std::span<const double> polygon : dataset.polygons(annotation))
        parts.push_back(rleFromPolygon(polygon, image.height, image.width));
      return merge(parts);
    }
    case SegmentationKind::kUncompressedRle: {
      const CocoRle& rle = dataset.rle(annotation);
      return Rle{rle.height, rle.width, {rle.counts.begin(), rle.counts.end()}};
    }
    case SegmentationKind::kCompressedRle: {
      const CocoRle& rle = dataset.rle(annotation);
      return fromCompressedString(rle.compressed, rle.height, rle.width);
    }
    case SegmentationKind::kNone:
      break;
  }
  return Rle{image.height, image.width, {image.height * image.width}};
}

}  // namespace mrcnn::dataset

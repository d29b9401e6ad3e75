#include "dataset/coco/dataset_builder.h"

#include <algorithm>
#include <numeric>

#include "dataset/coco/coco_storage.h"

namespace mrcnn::dataset::coco_detail {
namespace {

std::string elementPath(const char* section, const Place& place, const char* field = "") {
  return std::string(section) + "[" + std::to_string(place.element) + "]" + field;
}

template <class T>
void append(std::vector<T>& into, std::vector<T>& from) {
  into.insert(into.end(), std::make_move_iterator(from.begin()),
              std::make_move_iterator(from.end()));
}

// Indices 0..n-1 ordered by ids[i], ties in file order: the first of equal ids comes first.
template <class Id>
std::vector<uint32_t> orderById(size_t n, Id id) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return id(a) < id(b); });
  return order;
}

}  // namespace

Arenas& DatasetBuilder::arenas() {
  return dataset_.storage_->arenas;
}

void DatasetBuilder::warn(CocoWarning warning) {
  ++dataset_.warning_count_;
  if (dataset_.warnings_.size() < max_warnings_) dataset_.warnings_.push_back(std::move(warning));
}

void DatasetBuilder::merge(BatchResult& batch) {
  const auto polygon_base = static_cast<uint32_t>(dataset_.polygons_.size());
  const auto rle_base = static_cast<uint32_t>(dataset_.rles_.size());
  for (CocoAnnotation& a : batch.annotations) {
    if (a.segmentation == SegmentationKind::kPolygons) {
      a.segment_begin += polygon_base;
    } else if (a.segmentation != SegmentationKind::kNone) {
      a.segment_begin += rle_base;
    }
  }
  append(dataset_.polygons_, batch.polygons);
  append(dataset_.rles_, batch.rles);
  append(dataset_.annotations_, batch.annotations);
  append(annotation_places_, batch.annotation_places);
  append(dataset_.images_, batch.images);
  append(image_places_, batch.image_places);
  append(dataset_.categories_, batch.categories);
  append(category_places_, batch.category_places);
  dataset_.warning_count_ += batch.warning_count - batch.warnings.size();
  for (CocoWarning& w : batch.warnings)
    warn(std::move(w));
}

void DatasetBuilder::finishCategories() {
  std::vector<CocoCategory>& categories = dataset_.categories_;
  const std::vector<uint32_t> order =
      orderById(categories.size(), [&](uint32_t i) { return categories[i].id; });
  std::vector<CocoCategory> sorted;
  std::vector<IdEntry> entries;
  for (uint32_t i : order) {
    if (!sorted.empty() && sorted.back().id == categories[i].id) {
      warn({CocoWarningCode::kDuplicateCategoryId,
            "category id " + std::to_string(categories[i].id) + " is used twice: skipped",
            std::nullopt, std::nullopt, category_places_[i].byte_offset,
            elementPath("categories", category_places_[i], ".id")});
      continue;
    }
    entries.push_back({categories[i].id, static_cast<uint32_t>(sorted.size())});
    sorted.push_back(std::move(categories[i]));
  }
  categories = std::move(sorted);
  dataset_.storage_->categories = IdIndex(std::move(entries));
}

void DatasetBuilder::finishImages() {
  std::vector<CocoImage>& images = dataset_.images_;
  const std::vector<uint32_t> order =
      orderById(images.size(), [&](uint32_t i) { return images[i].id; });
  std::vector<bool> drop(images.size(), false);
  for (size_t k = 1; k < order.size(); ++k) {
    const uint32_t i = order[k];
    if (images[i].id != images[order[k - 1]].id) continue;
    drop[i] = true;
    warn({CocoWarningCode::kDuplicateImageId,
          "image id " + std::to_string(images[i].id) + " is used twice: skipped", images[i].id,
          std::nullopt, image_places_[i].byte_offset,
          elementPath("images", image_places_[i], ".id")});
  }
  std::vector<uint32_t> new_index(images.size());
  size_t kept = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    if (drop[i]) continue;
    new_index[i] = static_cast<uint32_t>(kept);
    images[kept++] = images[i];
  }
  images.resize(kept);
  std::vector<IdEntry> entries;
  entries.reserve(kept);
  for (uint32_t i : order) {
    if (!drop[i]) entries.push_back({images[new_index[i]].id, new_index[i]});
  }
  dataset_.storage_->images = IdIndex(std::move(entries));
  image_places_ = {};
}

void DatasetBuilder::finishAnnotations() {
  std::vector<CocoAnnotation>& annotations = dataset_.annotations_;
  const Storage& storage = *dataset_.storage_;
  size_t kept = 0;
  for (size_t i = 0; i < annotations.size(); ++i) {
    CocoAnnotation& a = annotations[i];
    const Place& place = annotation_places_[i];
    const std::optional<uint32_t> image = storage.images.find(a.image_id);
    if (!image) {
      warn({CocoWarningCode::kUnknownImageId,
            "image_id " + std::to_string(a.image_id) + " names no (valid) image: skipped",
            a.image_id, a.id, place.byte_offset, elementPath("annotations", place, ".image_id")});
      continue;
    }
    const std::optional<uint32_t> category = storage.categories.find(a.category_id);
    if (!category) {
      warn({CocoWarningCode::kUnknownCategoryId,
            "category_id " + std::to_string(a.category_id) + " names no category: skipped",
            a.image_id, a.id, place.byte_offset,
            elementPath("annotations", place, ".category_id")});
      continue;
    }
    a.image_index = *image;
    a.label = *category + 1;
    if (a.segmentation == SegmentationKind::kUncompressedRle ||
        a.segmentation == SegmentationKind::kCompressedRle) {
      const CocoRle& rle = dataset_.rles_[a.segment_begin];
      const CocoImage& im = dataset_.images_[*image];
      if (rle.height != im.height || rle.width != im.width) {
        warn({CocoWarningCode::kRleSizeMismatch,
              "RLE size " + std::to_string(rle.height) + "x" + std::to_string(rle.width) +
                  " differs from the image's " + std::to_string(im.height) + "x" +
                  std::to_string(im.width),
              a.image_id, a.id, place.byte_offset,
              elementPath("annotations", place, ".segmentation.size")});
      }
    }
    if (kept != i) {  // compacting after a skipped one
      annotation_places_[kept] = place;
      annotations[kept] = a;
    }
    ++kept;
  }
  annotations.resize(kept);
  annotation_places_.resize(kept);
}

void DatasetBuilder::warnDuplicateAnnotationIds() {
  const std::vector<CocoAnnotation>& annotations = dataset_.annotations_;
  const bool increasing = std::adjacent_find(annotations.begin(), annotations.end(),
                                             [](const CocoAnnotation& a, const CocoAnnotation& b) {
                                               return a.id >= b.id;
                                             }) == annotations.end();
  if (increasing) return;  // the usual case, and no sort needed
  const std::vector<uint32_t> order =
      orderById(annotations.size(), [&](uint32_t i) { return annotations[i].id; });
  for (size_t k = 1; k < order.size(); ++k) {
    const CocoAnnotation& a = annotations[order[k]];
    if (a.id != annotations[order[k - 1]].id) continue;
    const Place& place = annotation_places_[order[k]];
    warn({CocoWarningCode::kDuplicateAnnotationId,
          "annotation id " + std::to_string(a.id) + " is used twice (both kept)", a.image_id, a.id,
          place.byte_offset, elementPath("annotations", place, ".id")});
  }
}

void DatasetBuilder::buildImageAnnotations() {
  std::vector<uint32_t>& offsets = dataset_.image_offsets_;
  offsets.assign(dataset_.images_.size() + 1, 0);
  for (const CocoAnnotation& a : dataset_.annotations_)
    ++offsets[a.image_index + 1];
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  std::vector<uint32_t> next(offsets.begin(), offsets.end() - 1);
  dataset_.image_annotations_.resize(dataset_.annotations_.size());
  for (size_t i = 0; i < dataset_.annotations_.size(); ++i)
    dataset_.image_annotations_[next[dataset_.annotations_[i].image_index]++] =
        static_cast<uint32_t>(i);
}

CocoDataset DatasetBuilder::finish() {
  finishCategories();
  finishImages();
  finishAnnotations();
  warnDuplicateAnnotationIds();
  buildImageAnnotations();
  annotation_places_ = {};
  category_places_ = {};
  std::stable_sort(
      dataset_.warnings_.begin(), dataset_.warnings_.end(),
      [](const CocoWarning& a, const CocoWarning& b) { return a.byte_offset < b.byte_offset; });
  return std::move(dataset_);
}

}  // namespace mrcnn::dataset::coco_detail

// Assembles a CocoDataset from parsed batches (in file order), then checks what needs the whole
// file (ids across sections, duplicates) and builds the indexes.
#pragma once

#include <string>
#include <vector>

#include "dataset/coco/coco.h"
#include "dataset/coco/coco_batch.h"

namespace mrcnn::dataset::coco_detail {

class DatasetBuilder {
 public:
  explicit DatasetBuilder(size_t max_warnings) : max_warnings_(max_warnings) {}

  // The arenas of the calling thread's parses; parsing threads hand theirs over here.
  Arenas& arenas();
  // Copies the batch's records in (the batch is left for recycling).
  void merge(BatchResult& batch);
  void warn(CocoWarning warning);
  // Cross-checks, indexes, warnings sorted by offset. The builder is spent after.
  CocoDataset finish();

 private:
  void finishCategories();
  void finishImages();
  void finishAnnotations();
  void warnDuplicateAnnotationIds();
  void buildImageAnnotations();

  size_t max_warnings_;
  CocoDataset dataset_;
  std::vector<Place> image_places_;
  std::vector<Place> category_places_;
  std::vector<Place> annotation_places_;
};

}  // namespace mrcnn::dataset::coco_detail

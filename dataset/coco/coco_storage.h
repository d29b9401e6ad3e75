// What a CocoDataset owns besides its tables: the arenas its spans point into and the id
// indexes. Private to the dataset module.
#pragma once

#include "dataset/coco/coco_batch.h"
#include "dataset/coco/id_index.h"

namespace mrcnn::dataset::coco_detail {

struct Storage {
  Arenas arenas;
  IdIndex images;      // image id -> index in images()
  IdIndex categories;  // category id -> index in categories() (label - 1)
};

}  // namespace mrcnn::dataset::coco_detail

// Ground-truth overlays of one image of a COCO dataset: every annotation with its mask
// decoded (polygons or RLE, as pycocotools' annToRLE gives them), its box, its category's
// colour and name. Decoding is the slow part: call it from a worker thread.
#pragma once

#include <QString>
#include <cstdint>
#include <vector>

#include "dataset/coco/coco.h"
#include "ui/common/overlay.h"

namespace mrcnn::ui {

// The category's name, or its id in brackets when the dataset does not know it.
QString categoryName(const dataset::CocoDataset& coco, int64_t category_id);

// `highlight`: the annotation id drawn highlighted (in highlightColour), or -1.
std::vector<OverlayInstance> groundTruthInstances(const dataset::CocoDataset& coco,
                                                  uint32_t image_index, int64_t highlight = -1);

// The file of an image: `file_name` under the image folder.
QString imagePath(const QString& image_dir, const dataset::CocoImage& image);

}  // namespace mrcnn::ui

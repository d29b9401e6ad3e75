// An editable annotation (review/annotation_set.h) as an overlay instance: its mask (polygons
// rasterised as pycocotools does, or its RLE), box, category colour and name. The views that
// show annotations as they stand after edits (the label review, the dataset browser once its
// file has a journal) draw them with it.
#pragma once

#include <cstdint>

#include "review/annotation_set.h"
#include "ui/common/overlay.h"

namespace mrcnn::dataset {
class CocoDataset;
}

namespace mrcnn::ui {

// `h` x `w`: the image's size; `highlight`: drawn in highlightColour.
OverlayInstance annotationOverlay(const review::Annotation& a, const dataset::CocoDataset& coco,
                                  uint32_t h, uint32_t w, bool highlight = false);

}  // namespace mrcnn::ui

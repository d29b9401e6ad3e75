// A mask as COCO polygons: the outer boundary of each connected region, traced on the
// pixel grid (OpenCV's findContours, corners only), for tools that edit vertices (a labelling
// tool, the workbench's annotation editor) where an RLE cannot be dragged.
#pragma once

#include <vector>

#include "dataset/mask/rle.h"

namespace mrcnn::dataset {

// One polygon a region whose traced outline encloses at least `min_area` square pixels
// (x0 y0 x1 y1 ..., through pixel centres), largest first; holes are not kept. A region too
// small or thin for that (a stray pixel, a line) is left out.
std::vector<Polygon> polygonsFromMask(const Rle& mask, double min_area = 4);

}  // namespace mrcnn::dataset

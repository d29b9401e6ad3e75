// TAO's "mask out of its box" check. TAO's dataset_convert traces each instance mask with
// skimage.measure.find_contours(mask, 0.5) and flags the annotation when the contours reach
// beyond the box grown by one pixel. find_contours puts a contour point at the midpoint of
// every pair of 4-neighbour pixels that differ (pixel centres at integer coordinates), so
// the contours' extent follows from the mask alone: half a pixel outside the foreground,
// except along the image border, where nothing lies outside and the extent stops at the
// pixel (or half a pixel inside full rows/columns). This computes that extent from the runs,
// without decoding the mask.
#pragma once

#include <array>
#include <optional>

#include "dataset/mask/rle.h"

namespace mrcnn::dataset {

struct ContourExtent {
  double min_x = 0, max_x = 0, min_y = 0, max_y = 0;
};

// The extent of find_contours(mask, 0.5)'s points; nullopt when it returns no contour (an
// empty or full mask; skimage raises on masks less than 2x2, which also give nullopt).
// Throws std::invalid_argument when the runs do not add up to h * w.
std::optional<ContourExtent> contourExtent(const Rle& mask);

// TAO's test: x - 1 > min_x or y - 1 > min_y or x + w + 1 < max_x or y + h + 1 < max_y,
// with box = [x, y, w, h]. A mask without contours is never out of its box.
bool maskOutsideBox(const std::optional<ContourExtent>& extent, const std::array<double, 4>& box);

}  // namespace mrcnn::dataset

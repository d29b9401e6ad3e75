// Detections of one image in COCO's terms: category ids instead of contiguous labels, boxes
// as [x, y, w, h], masks as RLE (the mask API of dataset/mask/rle.h), ready for the results json
// and for the in-memory COCO evaluation.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "dataset/mask/rle.h"
#include "engine/model/postprocess.h"

namespace mrcnn::engine {

struct CocoInstance {
  int64_t label = 0;
  int64_t category_id = 0;
  std::array<double, 4> bbox{};  // x, y, w, h in original pixels
  double score = 0;
  std::optional<dataset::Rle> mask;
};

// category_ids[label] is the category id of a contiguous label (index 0, the background, is
// unused). Masks must be binary (uint8) at the original size.
std::vector<CocoInstance> cocoInstances(const model::ImageDetections& detections,
                                        const std::vector<int64_t>& category_ids);

}  // namespace mrcnn::engine

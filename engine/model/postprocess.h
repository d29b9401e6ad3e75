// Detections from the resized images back to the original ones, torchvision's
// GeneralizedRCNNTransform.postprocess: boxes scaled per axis by the float32 ratios
// original / resized, masks pasted into the original image (ops/paste_masks.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>

#include "engine/model/roi_heads.h"

namespace mrcnn::model {

struct ImageDetections {
  at::Tensor boxes;   // [K, 4] xyxy in original pixels
  at::Tensor scores;  // [K]
  at::Tensor labels;  // [K] int64
  at::Tensor masks;   // uint8 [K, H, W] 0/1 (binary) or float probabilities, original size
};

// resized: the image's size in the batch (before padding); original: its size as decoded.
// binary_threshold >= 0: masks are uint8, 1 where the probability is > the threshold
// (torchvision's users threshold at 0.5); < 0: float probabilities.
ImageDetections toOriginalImage(const Detections& detections, std::array<int64_t, 2> resized,
                                std::array<int64_t, 2> original, double binary_threshold = 0.5);

// Boxes [K, 4] scaled from `from` to `to` (height, width) with float32 ratios, as torchvision.
at::Tensor resizeBoxes(const at::Tensor& boxes, std::array<int64_t, 2> from,
                       std::array<int64_t, 2> to);

}  // namespace mrcnn::model

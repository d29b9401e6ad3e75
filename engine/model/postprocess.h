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
  // Defined when the masks are crops (tiled inference of a large image, where K masks of the
  // whole image would not fit in memory): masks is then uint8 [K, h, w], masks[k] covering the
  // image's pixels from (x, y) = mask_origins[k] (int64 [K, 2]) on, inside an image of
  // image_size (height, width); every pixel outside the crop is 0.
  at::Tensor mask_origins;
  std::array<int64_t, 2> image_size{};
};

// Detection k's binary mask over the whole image (uint8 [H, W]): masks[k] itself, or its crop
// placed at its origin.
at::Tensor wholeImageMask(const ImageDetections& detections, int64_t k);

// resized: the image's size in the batch (before padding); original: its size as decoded.
// binary_threshold >= 0: masks are uint8, 1 where the probability is > the threshold
// (torchvision's users threshold at 0.5); < 0: float probabilities.
ImageDetections toOriginalImage(const Detections& detections, std::array<int64_t, 2> resized,
                                std::array<int64_t, 2> original, double binary_threshold = 0.5);

// Boxes [K, 4] scaled from `from` to `to` (height, width) with float32 ratios, as torchvision.
at::Tensor resizeBoxes(const at::Tensor& boxes, std::array<int64_t, 2> from,
                       std::array<int64_t, 2> to);

}  // namespace mrcnn::model

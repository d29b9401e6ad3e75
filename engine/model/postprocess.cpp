#include "engine/model/postprocess.h"

#include <ATen/ATen.h>

#include "engine/ops/paste_masks.h"

namespace mrcnn::model {

at::Tensor resizeBoxes(const at::Tensor& boxes, std::array<int64_t, 2> from,
                       std::array<int64_t, 2> to) {
  // torchvision divides float32 tensors of the sizes: the same rounding here.
  const float ratio_h = static_cast<float>(to[0]) / static_cast<float>(from[0]);
  const float ratio_w = static_cast<float>(to[1]) / static_cast<float>(from[1]);
  const at::Tensor ratios =
      at::tensor({ratio_w, ratio_h, ratio_w, ratio_h}, boxes.options().dtype(at::kFloat))
          .to(boxes.dtype());
  return boxes * ratios;
}

ImageDetections toOriginalImage(const Detections& detections, std::array<int64_t, 2> resized,
                                std::array<int64_t, 2> original, double binary_threshold) {
  // Reduced precision (bf16 autocast) stops here: boxes are 1/256 of their size apart in
  // bf16, and the mask resampling needs float.
  ImageDetections out;
  out.boxes = resizeBoxes(detections.boxes.to(at::kFloat), resized, original);
  out.scores = detections.scores.to(at::kFloat);
  out.labels = detections.labels;
  if (detections.masks.defined()) {
    if (binary_threshold >= 0) {
      out.masks = ops::paste_masks_binary(detections.masks.to(at::kFloat), out.boxes, original[0], original[1],
                                          binary_threshold);
    } else {
      out.masks = ops::paste_masks(detections.masks.to(at::kFloat), out.boxes, original[0], original[1]);
    }
  }
  return out;
}

at::Tensor wholeImageMask(const ImageDetections& detections, int64_t k) {
  if (!detections.mask_origins.defined()) return detections.masks[k];
  const at::Tensor crop = detections.masks[k];
  const int64_t x = detections.mask_origins[k][0].item<int64_t>();
  const int64_t y = detections.mask_origins[k][1].item<int64_t>();
  at::Tensor out = at::zeros({detections.image_size[0], detections.image_size[1]}, crop.options());
  out.slice(0, y, y + crop.size(0)).slice(1, x, x + crop.size(1)).copy_(crop);
  return out;
}

}  // namespace mrcnn::model

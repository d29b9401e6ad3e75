// Pasting mask probabilities into the image, the operators mrcnn::paste_masks and
// mrcnn::paste_masks_binary: torchvision's paste_masks_in_image (the mask padded by `padding`
// zeros, its box expanded by the same factor and truncated to integers, the padded mask
// resized bilinearly (align_corners=False) to the integer box's size and clipped to the
// image), computed directly for each output pixel: no resized copy per mask, no full-size
// intermediate, every pixel written once.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace mrcnn::ops {

// masks: [N, M, M] or [N, 1, M, M] floating point (half and bfloat16 are computed in float),
// boxes: [N, 4] float or double (x1, y1, x2, y2) in image pixels. Returns [N, height, width]
// in the masks' dtype (float for half and bfloat16), zero outside each mask's box; equal to
// paste_masks_in_image(masks, boxes, (height, width), padding)[:, 0] (to float rounding on
// the CPU). Boxes partly or entirely outside the image paste what falls inside (torchvision
// fails on some boxes entirely outside); a box with a NaN coordinate pastes nothing.
// Not differentiable.
at::Tensor paste_masks(const at::Tensor& masks, const at::Tensor& boxes, int64_t height,
                       int64_t width, int64_t padding = 1);

// The same pasted probabilities thresholded as they are computed: uint8 [N, height, width],
// 1 where the probability is > threshold. Never materialises the probabilities.
at::Tensor paste_masks_binary(const at::Tensor& masks, const at::Tensor& boxes, int64_t height,
                              int64_t width, double threshold = 0.5, int64_t padding = 1);

}  // namespace mrcnn::ops

// RoIAlign (He et al., Mask R-CNN), the operator mrcnn::roi_align, with torchvision's exact
// semantics: the same sampling points, the same bilinear weights, the same handling of
// points outside the feature map, the same arithmetic order.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace mrcnn::ops {

// input: [N, C, H, W] floating point (float, double; half and bfloat16 too, computed in
// float). rois: [K, 5] of the same dtype, rows (batch index, x1, y1, x2, y2) in input-image
// coordinates; spatial_scale maps them onto this feature map. sampling_ratio > 0 samples
// that many points per bin side, <= 0 samples ceil(roi size / pooled size) (adaptive).
// aligned shifts box coordinates by -0.5 pixel (pixel centres at integer + 0.5) and does not
// force degenerate boxes to 1x1. Returns [K, C, pooled_height, pooled_width] in the input's
// layout: channels-last (NHWC) features give a channels-last result, with the same values.
// Differentiable with respect to input (not rois), like torchvision.
at::Tensor roi_align(const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                     int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                     bool aligned);

// The gradient of roi_align with respect to its input: grad [K, C, pooled_height,
// pooled_width] (any layout) scattered back into a zero tensor [batch_size, channels, height,
// width], channels-last when channels_last is set (as the input was).
at::Tensor roi_align_backward(const at::Tensor& grad, const at::Tensor& rois, double spatial_scale,
                              int64_t pooled_height, int64_t pooled_width, int64_t batch_size,
                              int64_t channels, int64_t height, int64_t width,
                              int64_t sampling_ratio, bool aligned, bool channels_last = false);

}  // namespace mrcnn::ops

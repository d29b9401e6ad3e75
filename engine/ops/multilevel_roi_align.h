// Multi-level RoIAlign in one op, mrcnn::multilevel_roi_align: each RoI is pooled from the
// feature map its level names, with that map's scale, by the RoIAlign of roi_align.h (the
// same sampling points and arithmetic, so the same bits as pooling each level's RoIs with
// roi_align). One call covers all levels: the RoIs are never split by level, so nothing on
// the host waits for the device to learn how many RoIs each level has.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace mrcnn::ops {

// The most feature maps one call takes (a GPU kernel's argument holds their table).
inline constexpr int64_t kMaxRoIAlignLevels = 8;

// features: L maps [N, C, H_l, W_l] of one dtype (float, double; half and bfloat16
// computed in float) and one layout; rois: [K, 5] floating point (batch index, x1, y1, x2,
// y2) in input-image coordinates, kept in their own precision; levels: int64 [K], each RoI's
// map in [0, L); scales: each map's spatial scale. On the CPU a level outside [0, L) is
// refused by name; on a GPU (no host check) its RoI's output is NaN. Returns [K, C,
// pooled_height, pooled_width] in the maps' dtype and layout. Differentiable with respect to
// the maps (each gets a gradient, zero where no RoI reads it).
at::Tensor multilevel_roi_align(at::TensorList features, const at::Tensor& rois,
                                const at::Tensor& levels, at::ArrayRef<double> scales,
                                int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                                bool aligned);

// The gradient of multilevel_roi_align with respect to its maps: grad [K, C, pooled_height,
// pooled_width] (any layout) scattered back into one zero tensor per map, [batch_size,
// channels, heights[l], widths[l]], channels-last when channels_last is set.
std::vector<at::Tensor> multilevel_roi_align_backward(
    const at::Tensor& grad, const at::Tensor& rois, const at::Tensor& levels,
    at::ArrayRef<double> scales, int64_t pooled_height, int64_t pooled_width, int64_t batch_size,
    int64_t channels, at::IntArrayRef heights, at::IntArrayRef widths, int64_t sampling_ratio,
    bool aligned, bool channels_last);

}  // namespace mrcnn::ops

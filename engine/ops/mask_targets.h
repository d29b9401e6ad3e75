// Mask R-CNN's mask targets, the operators mrcnn::mask_targets and mask_targets_cropped: each
// positive RoI's matched ground-truth mask cropped to the RoI and resampled to M x M, exactly as
// torchvision's project_masks_on_boxes computes them (RoIAlign of the mask at scale 1, adaptive
// sampling, aligned=False), but reading the masks in their own dtype (uint8 masks are not copied to
// float first).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace mrcnn::ops {

// gt_masks: [G, H, W] uint8, bool, float or double, the ground-truth masks of one image.
// rois: [P, 4] float or double (x1, y1, x2, y2) in the masks' pixels. matched_idxs: [P] int64,
// each RoI's ground-truth index in [0, G). Returns [P, M, M] of the rois' dtype: the average
// of the bilinearly sampled mask over ceil(roi size / M) x ceil(roi size / M) points per bin
// (boxes smaller than 1 pixel count as 1 pixel), torchvision's values bit for bit on the CPU.
// Not differentiable (targets). On the CPU an index outside [0, G) is an error; the CUDA
// kernel does not synchronise to check and writes NaN for such a RoI instead.
at::Tensor mask_targets(const at::Tensor& gt_masks, const at::Tensor& rois,
                        const at::Tensor& matched_idxs, int64_t M);

// The same targets from masks kept as their crops (the loader's, model/cropped_masks.h): mask
// g is the uint8 bytes crops[offsets[g] ...] of its window windows[g] = (x0, y0, width, height)
// in a height x width image, 0 outside the window. Equal, bit for bit, to mask_targets on the
// whole masks, without making any of them whole: the memory is the crops', and on a GPU
// nothing waits for the host. On the CPU a matched index outside [0, G) or a window outside
// the image or the crops is an error; the CUDA kernel writes NaN for such a RoI instead.
at::Tensor mask_targets_cropped(const at::Tensor& crops, const at::Tensor& windows,
                                const at::Tensor& offsets, int64_t height, int64_t width,
                                const at::Tensor& rois, const at::Tensor& matched_idxs, int64_t M);

}  // namespace mrcnn::ops

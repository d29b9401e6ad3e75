// Input checks of mrcnn::mask_targets shared by its CPU and CUDA kernels.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <cstdint>

namespace mrcnn::ops::detail {

inline void check_mask_targets_args(const at::Tensor& gt_masks, const at::Tensor& rois,
                                    const at::Tensor& matched_idxs, int64_t M) {
  TORCH_CHECK(gt_masks.dim() == 3, "mask_targets: gt_masks must be a 3-D tensor [G, H, W], got ",
              gt_masks.dim(), "-D ", gt_masks.sizes());
  const auto mt = gt_masks.scalar_type();
  TORCH_CHECK(mt == at::kByte || mt == at::kBool || mt == at::kFloat || mt == at::kDouble,
              "mask_targets: gt_masks must be uint8, bool, float or double, got ", mt);
  TORCH_CHECK(rois.dim() == 2 && rois.size(1) == 4,
              "mask_targets: rois must be a [P, 4] tensor of (x1, y1, x2, y2), got ", rois.sizes());
  TORCH_CHECK(rois.scalar_type() == at::kFloat || rois.scalar_type() == at::kDouble,
              "mask_targets: rois must be float or double, got ", rois.scalar_type());
  TORCH_CHECK(matched_idxs.dim() == 1 && matched_idxs.size(0) == rois.size(0),
              "mask_targets: matched_idxs must be a [P] tensor with one index per RoI (P = ",
              rois.size(0), "), got ", matched_idxs.sizes());
  TORCH_CHECK(matched_idxs.scalar_type() == at::kLong,
              "mask_targets: matched_idxs must be int64, got ", matched_idxs.scalar_type());
  TORCH_CHECK(gt_masks.device() == rois.device() && rois.device() == matched_idxs.device(),
              "mask_targets: gt_masks (", gt_masks.device(), "), rois (", rois.device(),
              ") and matched_idxs (", matched_idxs.device(), ") must be on the same device");
  TORCH_CHECK(M > 0, "mask_targets: the target size M must be positive, got ", M);
  if (rois.size(0) > 0) {
    TORCH_CHECK(gt_masks.size(0) > 0, "mask_targets: ", rois.size(0),
                " RoIs are matched to ground-truth masks but gt_masks is empty ", gt_masks.sizes());
    TORCH_CHECK(gt_masks.size(1) > 0 && gt_masks.size(2) > 0,
                "mask_targets: gt_masks has an empty spatial size ", gt_masks.sizes());
  }
}

}  // namespace mrcnn::ops::detail

// Input checks of mrcnn::mask_targets and mrcnn::mask_targets_cropped, and the crops' view,
// shared by their CPU and CUDA kernels.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <cstdint>

#include "engine/ops/mask_target_sources.h"

namespace mrcnn::ops::detail {

// The RoIs' and matched indices' part, shared by both ops (op: the name in messages).
inline void check_rois_and_matched(const char* op, const at::Tensor& rois,
                                   const at::Tensor& matched_idxs, int64_t M) {
  TORCH_CHECK(rois.dim() == 2 && rois.size(1) == 4, op,
              ": rois must be a [P, 4] tensor of (x1, y1, x2, y2), got ", rois.sizes());
  TORCH_CHECK(rois.scalar_type() == at::kFloat || rois.scalar_type() == at::kDouble, op,
              ": rois must be float or double, got ", rois.scalar_type());
  TORCH_CHECK(matched_idxs.dim() == 1 && matched_idxs.size(0) == rois.size(0), op,
              ": matched_idxs must be a [P] tensor with one index per RoI (P = ", rois.size(0),
              "), got ", matched_idxs.sizes());
  TORCH_CHECK(matched_idxs.scalar_type() == at::kLong, op, ": matched_idxs must be int64, got ",
              matched_idxs.scalar_type());
  TORCH_CHECK(rois.device() == matched_idxs.device(), op, ": rois (", rois.device(),
              ") and matched_idxs (", matched_idxs.device(), ") must be on the same device");
  TORCH_CHECK(M > 0, op, ": the target size M must be positive, got ", M);
}

inline void check_mask_targets_args(const at::Tensor& gt_masks, const at::Tensor& rois,
                                    const at::Tensor& matched_idxs, int64_t M) {
  TORCH_CHECK(gt_masks.dim() == 3, "mask_targets: gt_masks must be a 3-D tensor [G, H, W], got ",
              gt_masks.dim(), "-D ", gt_masks.sizes());
  const auto mt = gt_masks.scalar_type();
  TORCH_CHECK(mt == at::kByte || mt == at::kBool || mt == at::kFloat || mt == at::kDouble,
              "mask_targets: gt_masks must be uint8, bool, float or double, got ", mt);
  check_rois_and_matched("mask_targets", rois, matched_idxs, M);
  TORCH_CHECK(gt_masks.device() == rois.device(), "mask_targets: gt_masks (", gt_masks.device(),
              ") and rois (", rois.device(), ") must be on the same device");
  if (rois.size(0) > 0) {
    TORCH_CHECK(gt_masks.size(0) > 0, "mask_targets: ", rois.size(0),
                " RoIs are matched to ground-truth masks but gt_masks is empty ", gt_masks.sizes());
    TORCH_CHECK(gt_masks.size(1) > 0 && gt_masks.size(2) > 0,
                "mask_targets: gt_masks has an empty spatial size ", gt_masks.sizes());
  }
}

inline void check_mask_targets_cropped_args(const at::Tensor& crops, const at::Tensor& windows,
                                            const at::Tensor& offsets, int64_t height,
                                            int64_t width, const at::Tensor& rois,
                                            const at::Tensor& matched_idxs, int64_t M) {
  const char* op = "mask_targets_cropped";
  check_rois_and_matched(op, rois, matched_idxs, M);
  TORCH_CHECK(crops.dim() == 1 && crops.scalar_type() == at::kByte, op,
              ": crops must be the uint8 bytes of the crops, 1-D, got ", crops.scalar_type(), " ",
              crops.sizes());
  TORCH_CHECK(windows.dim() == 2 && windows.size(1) == 4 && windows.scalar_type() == at::kLong, op,
              ": windows must be int64 [G, 4] (x0, y0, width, height), got ", windows.scalar_type(),
              " ", windows.sizes());
  TORCH_CHECK(offsets.dim() == 1 && offsets.size(0) == windows.size(0) &&
                  offsets.scalar_type() == at::kLong,
              op, ": offsets must be int64 [G] (G = ", windows.size(0), "), got ",
              offsets.scalar_type(), " ", offsets.sizes());
  TORCH_CHECK(crops.device() == rois.device() && windows.device() == rois.device() &&
                  offsets.device() == rois.device(),
              op, ": crops (", crops.device(), "), windows (", windows.device(), "), offsets (",
              offsets.device(), ") and rois (", rois.device(), ") must be on the same device");
  if (rois.size(0) > 0) {
    TORCH_CHECK(windows.size(0) > 0, op, ": ", rois.size(0),
                " RoIs are matched to ground-truth masks but there is none");
    TORCH_CHECK(height > 0 && width > 0, op, ": the image size must be positive, got ", width,
                " x ", height);
  }
}

// The crops as the kernels read them: contiguous tensors (kept here, alive as long as this)
// and the view of them.
struct CroppedMaskTensors {
  at::Tensor data, windows, offsets;
  CroppedMaskSet set;
};

inline CroppedMaskTensors cropped_mask_tensors(const at::Tensor& crops, const at::Tensor& windows,
                                               const at::Tensor& offsets, int64_t height,
                                               int64_t width) {
  CroppedMaskTensors t{crops.contiguous(), windows.contiguous(), offsets.contiguous(), {}};
  t.set = {t.data.const_data_ptr<uint8_t>(),
           t.data.numel(),
           t.windows.const_data_ptr<int64_t>(),
           t.offsets.const_data_ptr<int64_t>(),
           t.windows.size(0),
           height,
           width};
  return t;
}

}  // namespace mrcnn::ops::detail

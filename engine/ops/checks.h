// Input checks shared by the CPU and CUDA kernels of the ops: one readable message per
// misuse, naming the op and the argument.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <cstdint>

#include "engine/ops/multilevel_roi_align.h"

namespace mrcnn::ops::detail {

inline void check_roi_align_args(const char* op, const at::Tensor& features,
                                 const char* features_name, const at::Tensor& rois,
                                 int64_t pooled_height, int64_t pooled_width) {
  TORCH_CHECK(features.dim() == 4, op, ": ", features_name,
              " must be a 4-D tensor [N, C, H, W], got ", features.dim(), "-D ", features.sizes());
  TORCH_CHECK(rois.dim() == 2 && rois.size(1) == 5, op,
              ": rois must be a [K, 5] tensor of (batch index, x1, y1, x2, y2), got ",
              rois.sizes());
  TORCH_CHECK(at::isFloatingType(features.scalar_type()), op, ": ", features_name,
              " must be floating point, got ", features.scalar_type());
  TORCH_CHECK(features.scalar_type() == rois.scalar_type(), op, ": ", features_name, " (",
              features.scalar_type(), ") and rois (", rois.scalar_type(),
              ") must have the same dtype");
  TORCH_CHECK(features.device() == rois.device(), op, ": ", features_name, " (", features.device(),
              ") and rois (", rois.device(), ") must be on the same device");
  TORCH_CHECK(pooled_height > 0 && pooled_width > 0, op, ": the pooled size must be positive, got ",
              pooled_height, "x", pooled_width);
}

// multilevel_roi_align's maps, RoIs and levels (the RoIs may be of another float dtype than
// the maps: they are read in the precision the kernel computes in).
inline void check_multilevel_roi_align_args(const char* op, at::TensorList features,
                                            const at::Tensor& rois, const at::Tensor& levels,
                                            at::ArrayRef<double> scales, int64_t pooled_height,
                                            int64_t pooled_width) {
  TORCH_CHECK(!features.empty() && static_cast<int64_t>(features.size()) <= kMaxRoIAlignLevels, op,
              ": takes 1 to ", kMaxRoIAlignLevels, " feature maps, got ", features.size());
  TORCH_CHECK(scales.size() == features.size(), op, ": ", features.size(),
              " feature maps need as many scales, got ", scales.size());
  const at::Tensor& first = features[0];
  for (size_t l = 0; l < features.size(); ++l) {
    const at::Tensor& f = features[l];
    TORCH_CHECK(f.dim() == 4, op, ": features[", l, "] must be a 4-D tensor [N, C, H, W], got ",
                f.dim(), "-D ", f.sizes());
    TORCH_CHECK(at::isFloatingType(f.scalar_type()), op, ": features[", l,
                "] must be floating point, got ", f.scalar_type());
    TORCH_CHECK(f.scalar_type() == first.scalar_type() && f.device() == first.device(), op,
                ": features[", l, "] (", f.scalar_type(), ", ", f.device(),
                ") must have the dtype and device of features[0] (", first.scalar_type(), ", ",
                first.device(), ")");
    TORCH_CHECK(f.size(0) == first.size(0) && f.size(1) == first.size(1), op, ": features[", l,
                "] ", f.sizes(), " must have the batch size and channels of features[0] ",
                first.sizes());
    TORCH_CHECK(scales[l] > 0, op, ": scales[", l, "] must be positive, got ", scales[l]);
  }
  TORCH_CHECK(rois.dim() == 2 && rois.size(1) == 5, op,
              ": rois must be a [K, 5] tensor of (batch index, x1, y1, x2, y2), got ",
              rois.sizes());
  TORCH_CHECK(at::isFloatingType(rois.scalar_type()), op, ": rois must be floating point, got ",
              rois.scalar_type());
  TORCH_CHECK(
      levels.dim() == 1 && levels.size(0) == rois.size(0) && levels.scalar_type() == at::kLong, op,
      ": levels must be int64 [K] (K = ", rois.size(0), "), got ", levels.scalar_type(), " ",
      levels.sizes());
  TORCH_CHECK(rois.device() == first.device() && levels.device() == first.device(), op, ": rois (",
              rois.device(), ") and levels (", levels.device(),
              ") must be on the features' device (", first.device(), ")");
  TORCH_CHECK(pooled_height > 0 && pooled_width > 0, op, ": the pooled size must be positive, got ",
              pooled_height, "x", pooled_width);
}

// _multilevel_roi_align_backward's gradient, RoIs, levels and map sizes.
inline void check_multilevel_roi_align_backward_args(
    const char* op, const at::Tensor& grad, const at::Tensor& rois, const at::Tensor& levels,
    at::ArrayRef<double> scales, int64_t pooled_height, int64_t pooled_width, int64_t channels,
    at::IntArrayRef heights, at::IntArrayRef widths) {
  TORCH_CHECK(!scales.empty() && static_cast<int64_t>(scales.size()) <= kMaxRoIAlignLevels &&
                  heights.size() == scales.size() && widths.size() == scales.size(),
              op, ": 1 to ", kMaxRoIAlignLevels,
              " maps, each with a scale, a height and a width, got ", scales.size(), " scales, ",
              heights.size(), " heights and ", widths.size(), " widths");
  TORCH_CHECK(at::isFloatingType(grad.scalar_type()), op, ": grad must be floating point, got ",
              grad.scalar_type());
  TORCH_CHECK(rois.dim() == 2 && rois.size(1) == 5 && at::isFloatingType(rois.scalar_type()), op,
              ": rois must be a floating point [K, 5] tensor, got ", rois.scalar_type(), " ",
              rois.sizes());
  TORCH_CHECK(grad.dim() == 4 && grad.size(0) == rois.size(0) && grad.size(1) == channels &&
                  grad.size(2) == pooled_height && grad.size(3) == pooled_width,
              op, ": grad must be [K, C, pooled_height, pooled_width] = [", rois.size(0), ", ",
              channels, ", ", pooled_height, ", ", pooled_width, "], got ", grad.sizes());
  TORCH_CHECK(
      levels.dim() == 1 && levels.size(0) == rois.size(0) && levels.scalar_type() == at::kLong, op,
      ": levels must be int64 [K] (K = ", rois.size(0), "), got ", levels.scalar_type(), " ",
      levels.sizes());
  TORCH_CHECK(rois.device() == grad.device() && levels.device() == grad.device(), op, ": rois (",
              rois.device(), ") and levels (", levels.device(), ") must be on grad's device (",
              grad.device(), ")");
}

inline void check_boxes(const char* op, const char* name, const at::Tensor& boxes) {
  TORCH_CHECK(boxes.dim() == 2 && boxes.size(1) == 4, op, ": ", name,
              " must be a [N, 4] tensor of (x1, y1, x2, y2), got ", boxes.sizes());
  TORCH_CHECK(at::isFloatingType(boxes.scalar_type()), op, ": ", name,
              " must be floating point, got ", boxes.scalar_type());
}

inline void check_nms_args(const at::Tensor& boxes, const at::Tensor& scores) {
  check_boxes("nms", "boxes", boxes);
  TORCH_CHECK(scores.dim() == 1, "nms: scores must be a 1-D tensor [N], got ", scores.sizes());
  TORCH_CHECK(boxes.size(0) == scores.size(0), "nms: boxes and scores must have as many rows, got ",
              boxes.size(0), " and ", scores.size(0));
  TORCH_CHECK(boxes.scalar_type() == scores.scalar_type(), "nms: boxes (", boxes.scalar_type(),
              ") and scores (", scores.scalar_type(), ") must have the same dtype");
  TORCH_CHECK(boxes.device() == scores.device(), "nms: boxes (", boxes.device(), ") and scores (",
              scores.device(), ") must be on the same device");
}

inline void check_nms_keep_mask_args(const at::Tensor& boxes, const at::Tensor& scores,
                                     const at::Tensor& categories, const at::Tensor& valid) {
  constexpr const char* op = "nms_keep_mask";
  TORCH_CHECK(boxes.dim() == 3 && boxes.size(2) == 4, op,
              ": boxes must be a [B, K, 4] tensor of (x1, y1, x2, y2), got ", boxes.sizes());
  TORCH_CHECK(at::isFloatingType(boxes.scalar_type()), op, ": boxes must be floating point, got ",
              boxes.scalar_type());
  const at::IntArrayRef bk = boxes.sizes().slice(0, 2);
  TORCH_CHECK(scores.sizes() == bk && scores.scalar_type() == boxes.scalar_type(), op,
              ": scores must be [B, K] = ", bk, " of the boxes' dtype, got ", scores.scalar_type(),
              " ", scores.sizes());
  TORCH_CHECK(categories.sizes() == bk && categories.scalar_type() == at::kLong, op,
              ": categories must be int64 [B, K] = ", bk, ", got ", categories.scalar_type(), " ",
              categories.sizes());
  TORCH_CHECK(valid.sizes() == bk && valid.scalar_type() == at::kBool, op,
              ": valid must be bool [B, K] = ", bk, ", got ", valid.scalar_type(), " ",
              valid.sizes());
  for (const at::Tensor* t : {&scores, &categories, &valid}) {
    TORCH_CHECK(t->device() == boxes.device(), op, ": all inputs must be on the boxes' device (",
                boxes.device(), "), got one on ", t->device());
  }
}

inline void check_box_pair(const char* op, const char* name1, const at::Tensor& boxes1,
                           const char* name2, const at::Tensor& boxes2) {
  TORCH_CHECK(boxes1.scalar_type() == boxes2.scalar_type(), op, ": ", name1, " (",
              boxes1.scalar_type(), ") and ", name2, " (", boxes2.scalar_type(),
              ") must have the same dtype");
  TORCH_CHECK(boxes1.device() == boxes2.device(), op, ": ", name1, " (", boxes1.device(), ") and ",
              name2, " (", boxes2.device(), ") must be on the same device");
}

inline void check_encode_args(const at::Tensor& reference_boxes, const at::Tensor& proposals) {
  check_boxes("encode_boxes", "reference_boxes", reference_boxes);
  check_boxes("encode_boxes", "proposals", proposals);
  TORCH_CHECK(reference_boxes.size(0) == proposals.size(0),
              "encode_boxes: reference_boxes and proposals must have as many rows, got ",
              reference_boxes.size(0), " and ", proposals.size(0));
  check_box_pair("encode_boxes", "reference_boxes", reference_boxes, "proposals", proposals);
}

inline void check_decode_args(const at::Tensor& rel_codes, const at::Tensor& boxes) {
  check_boxes("decode_boxes", "boxes", boxes);
  TORCH_CHECK(rel_codes.dim() == 2 && rel_codes.size(1) % 4 == 0 && rel_codes.size(1) > 0,
              "decode_boxes: rel_codes must be a [N, 4 * K] tensor, got ", rel_codes.sizes());
  TORCH_CHECK(rel_codes.size(0) == boxes.size(0),
              "decode_boxes: rel_codes and boxes must have as many rows, got ", rel_codes.size(0),
              " and ", boxes.size(0));
  TORCH_CHECK(at::isFloatingType(rel_codes.scalar_type()),
              "decode_boxes: rel_codes must be floating point, got ", rel_codes.scalar_type());
  TORCH_CHECK(rel_codes.device() == boxes.device(), "decode_boxes: rel_codes (", rel_codes.device(),
              ") and boxes (", boxes.device(), ") must be on the same device");
}

}  // namespace mrcnn::ops::detail

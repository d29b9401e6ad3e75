// Input checks shared by the CPU and CUDA kernels of the ops: one readable message per
// misuse, naming the op and the argument.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <cstdint>

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

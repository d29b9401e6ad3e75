// Non-maximum suppression, the operators mrcnn::nms and mrcnn::batched_nms, with
// torchvision's results (same kept set, same order, ties included).
#pragma once

#include <ATen/core/Tensor.h>

namespace mrcnn::ops {

// boxes: [N, 4] (x1, y1, x2, y2); scores: [N], same dtype. Greedily keeps the best-scoring
// box and drops every later box whose IoU with it is > iou_threshold (IoU exactly at the
// threshold is kept). Returns int64 indices of the kept boxes, by decreasing score; equal
// scores by increasing index (a stable sort, as torchvision's kernels).
at::Tensor nms(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold);

// NMS within each category (idxs: [N] integer category of each box), never across. The
// same algorithm as torchvision picks per size and device: below 4000 coordinates on the CPU
// (100000 on CUDA) one NMS over boxes shifted apart per category, above it one NMS per
// category. Returns int64 indices by decreasing score. On the per-category path the final
// order of equal scores is at::sort's unstable one, as torchvision's (Python) code has it.
at::Tensor batched_nms(const at::Tensor& boxes, const at::Tensor& scores, const at::Tensor& idxs,
                       double iou_threshold);

// NMS of a batch of images at once, without the host: which boxes NMS keeps, as a mask.
// boxes [B, K, 4], scores [B, K] (same dtype), categories [B, K] int64, valid [B, K] bool.
// Within each image, the valid boxes are visited by decreasing score (equal scores by
// increasing index) and each kept box drops every later box of its own category whose IoU
// with it is > iou_threshold; boxes of different categories never suppress each other (what
// batched_nms's per-category path gives). Invalid boxes are neither kept nor suppress.
// Returns bool [B, K]. On a GPU the greedy pass runs on the device too: nothing waits.
at::Tensor nms_keep_mask(const at::Tensor& boxes, const at::Tensor& scores,
                         const at::Tensor& categories, const at::Tensor& valid,
                         double iou_threshold);

// Near-certain candidates. Each runtime's sigmoid and softmax round to exactly 1.0 from
// another logit (float32 sigmoid: from about 16.0 in ONNX Runtime, 16.6 in LibTorch, 17.3 in
// OpenVINO) and round differently just below, so with large logits the candidates near 1.0
// would tie in one runtime and not in another, each runtime would break the ties its own
// way, and each would keep other boxes. The NMS key of a candidate whose logit (the RPN's, or
// for a class its logit against all other classes, l_c - logsumexp_{j != c} l_j) is at least
// kNmsCertainLogit is therefore that logit: above every probability, in the order of the
// probabilities, the same in every runtime. Below, the key is the probability itself, as
// torchvision's (whose order among probabilities above 1 - 6e-6 is its rounding's).
inline constexpr float kNmsCertainLogit = 12.0f;

}  // namespace mrcnn::ops

// Box regression encoding (torchvision's BoxCoder), the operators mrcnn::encode_boxes and
// mrcnn::decode_boxes: offsets (dx, dy, dw, dh) of a box relative to a reference box,
// scaled by weights (wx, wy, ww, wh).
#pragma once

#include <ATen/core/Tensor.h>

#include <cmath>

namespace mrcnn::ops {

struct BoxCoderWeights {
  double wx = 1.0;
  double wy = 1.0;
  double ww = 1.0;
  double wh = 1.0;
};

// torchvision's bbox_xform_clip: predicted log-scale offsets are clamped to this, so that a
// box grows at most 1000/16 times.
inline const double kDefaultBoxXformClip = std::log(1000.0 / 16);

// The regression targets of reference_boxes (ground truth) relative to proposals, both
// [N, 4] (x1, y1, x2, y2): [N, 4] of (dx, dy, dw, dh).
at::Tensor encode_boxes(const at::Tensor& reference_boxes, const at::Tensor& proposals,
                        const BoxCoderWeights& weights);

// Applies rel_codes [N, 4 * K] (K sets of (dx, dy, dw, dh), one per class) to boxes [N, 4]:
// [N, 4 * K] boxes (x1, y1, x2, y2). dw and dh are clamped to bbox_xform_clip first. boxes
// are converted to the dtype of rel_codes.
at::Tensor decode_boxes(const at::Tensor& rel_codes, const at::Tensor& boxes,
                        const BoxCoderWeights& weights,
                        double bbox_xform_clip = kDefaultBoxXformClip);

}  // namespace mrcnn::ops

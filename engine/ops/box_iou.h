// Pairwise IoU of two sets of boxes, the operator mrcnn::box_iou (torchvision.ops.box_iou).
#pragma once

#include <ATen/core/Tensor.h>

namespace mrcnn::ops {

// boxes1: [N, 4], boxes2: [M, 4] (x1, y1, x2, y2), same dtype and device. Returns [N, M]:
// float for half/bfloat16 input (as torchvision upcasts), else the input dtype.
at::Tensor box_iou(const at::Tensor& boxes1, const at::Tensor& boxes2);

}  // namespace mrcnn::ops

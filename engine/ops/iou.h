// Intersection over union of two boxes (x1, y1, x2, y2), in torchvision's arithmetic order;
// shared by the NMS and box_iou kernels on both devices.
#pragma once

#include "engine/ops/host_device.h"

namespace mrcnn::ops::detail {

template <typename T>
MRCNN_HOST_DEVICE T box_area(const T* b) {
  return (b[2] - b[0]) * (b[3] - b[1]);
}

// area_a and area_b are box_area of a and b.
template <typename T>
MRCNN_HOST_DEVICE T box_iou_one(const T* a, T area_a, const T* b, T area_b) {
  const T w = max_of(static_cast<T>(0), min_of(a[2], b[2]) - max_of(a[0], b[0]));
  const T h = max_of(static_cast<T>(0), min_of(a[3], b[3]) - max_of(a[1], b[1]));
  const T inter = w * h;
  return inter / (area_a + area_b - inter);
}

}  // namespace mrcnn::ops::detail

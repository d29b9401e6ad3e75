// Declares mrcnn::box_iou; kernels in cpu/box_iou_kernel.cpp and cuda/box_iou_kernel.cu.
#include "engine/ops/box_iou.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace mrcnn::ops {

at::Tensor box_iou(const at::Tensor& boxes1, const at::Tensor& boxes2) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("mrcnn::box_iou", "")
                             .typed<decltype(box_iou)>();
  return op.call(boxes1, boxes2);
}

}  // namespace mrcnn::ops

TORCH_LIBRARY_FRAGMENT(mrcnn, m) {
  m.def("box_iou(Tensor boxes1, Tensor boxes2) -> Tensor");
}

// Declares mrcnn::nms; kernels in cpu/nms_kernel.cpp and cuda/nms_kernel.cu.
#include "engine/ops/nms.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace mrcnn::ops {

at::Tensor nms(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("mrcnn::nms", "").typed<decltype(nms)>();
  return op.call(boxes, scores, iou_threshold);
}

}  // namespace mrcnn::ops

TORCH_LIBRARY_FRAGMENT(mrcnn, m) {
  m.def("nms(Tensor boxes, Tensor scores, float iou_threshold) -> Tensor");
}

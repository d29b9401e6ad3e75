// Declares mrcnn::nms and mrcnn::nms_keep_mask; kernels in cpu/nms_kernel.cpp and
// cuda/nms_kernel.cu.
#include "engine/ops/nms.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace mrcnn::ops {

at::Tensor nms(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("mrcnn::nms", "").typed<decltype(nms)>();
  return op.call(boxes, scores, iou_threshold);
}

at::Tensor nms_keep_mask(const at::Tensor& boxes, const at::Tensor& scores,
                         const at::Tensor& categories, const at::Tensor& valid,
                         double iou_threshold) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("mrcnn::nms_keep_mask", "")
                             .typed<decltype(nms_keep_mask)>();
  return op.call(boxes, scores, categories, valid, iou_threshold);
}

}  // namespace mrcnn::ops

TORCH_LIBRARY_FRAGMENT(mrcnn, m) {
  m.def("nms(Tensor boxes, Tensor scores, float iou_threshold) -> Tensor");
  m.def(
      "nms_keep_mask(Tensor boxes, Tensor scores, Tensor categories, Tensor valid, "
      "float iou_threshold) -> Tensor");
}

// Declares mrcnn::paste_masks and mrcnn::paste_masks_binary; kernels in
// cpu/paste_masks_kernel.cpp and cuda/paste_masks_kernel.cu.
#include "engine/ops/paste_masks.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace mrcnn::ops {

at::Tensor paste_masks(const at::Tensor& masks, const at::Tensor& boxes, int64_t height,
                       int64_t width, int64_t padding) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("mrcnn::paste_masks", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, int64_t, int64_t, int64_t)>();
  return op.call(masks, boxes, height, width, padding);
}

at::Tensor paste_masks_binary(const at::Tensor& masks, const at::Tensor& boxes, int64_t height,
                              int64_t width, double threshold, int64_t padding) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("mrcnn::paste_masks_binary", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&, int64_t,
                                               int64_t, double, int64_t)>();
  return op.call(masks, boxes, height, width, threshold, padding);
}

}  // namespace mrcnn::ops

TORCH_LIBRARY_FRAGMENT(mrcnn, m) {
  m.def("paste_masks(Tensor masks, Tensor boxes, int height, int width, int padding=1) -> Tensor");
  m.def(
      "paste_masks_binary(Tensor masks, Tensor boxes, int height, int width, "
      "float threshold=0.5, int padding=1) -> Tensor");
}

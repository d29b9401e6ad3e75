// Declares mrcnn::mask_targets and mrcnn::mask_targets_cropped; kernels in
// cpu/mask_targets_kernel.cpp and cuda/mask_targets_kernel.cu.
#include "engine/ops/mask_targets.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace mrcnn::ops {

at::Tensor mask_targets(const at::Tensor& gt_masks, const at::Tensor& rois,
                        const at::Tensor& matched_idxs, int64_t M) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("mrcnn::mask_targets", "")
                             .typed<decltype(mask_targets)>();
  return op.call(gt_masks, rois, matched_idxs, M);
}

at::Tensor mask_targets_cropped(const at::Tensor& crops, const at::Tensor& windows,
                                const at::Tensor& offsets, int64_t height, int64_t width,
                                const at::Tensor& rois, const at::Tensor& matched_idxs, int64_t M) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("mrcnn::mask_targets_cropped", "")
                             .typed<decltype(mask_targets_cropped)>();
  return op.call(crops, windows, offsets, height, width, rois, matched_idxs, M);
}

}  // namespace mrcnn::ops

TORCH_LIBRARY_FRAGMENT(mrcnn, m) {
  m.def("mask_targets(Tensor gt_masks, Tensor rois, Tensor matched_idxs, int M) -> Tensor");
  m.def(
      "mask_targets_cropped(Tensor crops, Tensor windows, Tensor offsets, int height, int width, "
      "Tensor rois, Tensor matched_idxs, int M) -> Tensor");
}

// Declares mrcnn::multilevel_roi_align and mrcnn::_multilevel_roi_align_backward; the kernels
// are registered by cpu/roi_align_kernel.cpp, cuda/roi_align_kernel.cu, roi_align_autograd.cpp
// and autocast.cpp.
#include "engine/ops/multilevel_roi_align.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace mrcnn::ops {

at::Tensor multilevel_roi_align(at::TensorList features, const at::Tensor& rois,
                                const at::Tensor& levels, at::ArrayRef<double> scales,
                                int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                                bool aligned) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("mrcnn::multilevel_roi_align", "")
                             .typed<decltype(multilevel_roi_align)>();
  return op.call(features, rois, levels, scales, pooled_height, pooled_width, sampling_ratio,
                 aligned);
}

std::vector<at::Tensor> multilevel_roi_align_backward(
    const at::Tensor& grad, const at::Tensor& rois, const at::Tensor& levels,
    at::ArrayRef<double> scales, int64_t pooled_height, int64_t pooled_width, int64_t batch_size,
    int64_t channels, at::IntArrayRef heights, at::IntArrayRef widths, int64_t sampling_ratio,
    bool aligned, bool channels_last) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("mrcnn::_multilevel_roi_align_backward", "")
                             .typed<decltype(multilevel_roi_align_backward)>();
  return op.call(grad, rois, levels, scales, pooled_height, pooled_width, batch_size, channels,
                 heights, widths, sampling_ratio, aligned, channels_last);
}

}  // namespace mrcnn::ops

TORCH_LIBRARY_FRAGMENT(mrcnn, m) {
  m.def(
      "multilevel_roi_align(Tensor[] features, Tensor rois, Tensor levels, float[] scales, "
      "int pooled_height, int pooled_width, int sampling_ratio, bool aligned) -> Tensor");
  m.def(
      "_multilevel_roi_align_backward(Tensor grad, Tensor rois, Tensor levels, float[] scales, "
      "int pooled_height, int pooled_width, int batch_size, int channels, int[] heights, "
      "int[] widths, int sampling_ratio, bool aligned, bool channels_last) -> Tensor[]");
}

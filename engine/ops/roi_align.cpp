// Declares mrcnn::roi_align and mrcnn::_roi_align_backward; the kernels are registered by
// cpu/roi_align_kernel.cpp, cuda/roi_align_kernel.cu and roi_align_autograd.cpp.
#include "engine/ops/roi_align.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace mrcnn::ops {

at::Tensor roi_align(const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                     int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                     bool aligned) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("mrcnn::roi_align", "")
                             .typed<decltype(roi_align)>();
  return op.call(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned);
}

at::Tensor roi_align_backward(const at::Tensor& grad, const at::Tensor& rois, double spatial_scale,
                              int64_t pooled_height, int64_t pooled_width, int64_t batch_size,
                              int64_t channels, int64_t height, int64_t width,
                              int64_t sampling_ratio, bool aligned, bool channels_last) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("mrcnn::_roi_align_backward", "")
                             .typed<decltype(roi_align_backward)>();
  return op.call(grad, rois, spatial_scale, pooled_height, pooled_width, batch_size, channels,
                 height, width, sampling_ratio, aligned, channels_last);
}

}  // namespace mrcnn::ops

// Each op file adds its own schemas to the mrcnn namespace, hence FRAGMENT.
TORCH_LIBRARY_FRAGMENT(mrcnn, m) {
  m.def(
      "roi_align(Tensor input, Tensor rois, float spatial_scale, int pooled_height, "
      "int pooled_width, int sampling_ratio, bool aligned) -> Tensor");
  m.def(
      "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, int pooled_height, "
      "int pooled_width, int batch_size, int channels, int height, int width, "
      "int sampling_ratio, bool aligned, bool channels_last=False) -> Tensor");
}

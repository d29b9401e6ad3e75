// Autocast kernels of mrcnn::roi_align, mrcnn::multilevel_roi_align and mrcnn::nms. Under
// mixed precision the features are half or bfloat16 while the RoIs and boxes stay float: the
// ops run in float (the precision their geometry needs), and the RoIAlign ops return the
// features' dtype, as torchvision's autocast kernels do.
#include <ATen/autocast_mode.h>
#include <ATen/core/Tensor.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include "engine/ops/multilevel_roi_align.h"
#include "engine/ops/nms.h"
#include "engine/ops/roi_align.h"

namespace mrcnn::ops {
namespace {

template <c10::DispatchKey AutocastKey, c10::DeviceType Device>
at::Tensor roi_align_autocast(const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                              int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                              bool aligned) {
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(AutocastKey);
  return roi_align(at::autocast::cached_cast(at::kFloat, input, Device),
                   at::autocast::cached_cast(at::kFloat, rois, Device), spatial_scale,
                   pooled_height, pooled_width, sampling_ratio, aligned)
      .to(input.scalar_type());
}

template <c10::DispatchKey AutocastKey, c10::DeviceType Device>
at::Tensor multilevel_roi_align_autocast(at::TensorList features, const at::Tensor& rois,
                                         const at::Tensor& levels, at::ArrayRef<double> scales,
                                         int64_t pooled_height, int64_t pooled_width,
                                         int64_t sampling_ratio, bool aligned) {
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(AutocastKey);
  std::vector<at::Tensor> maps;
  for (const at::Tensor& f : features)
    maps.push_back(at::autocast::cached_cast(at::kFloat, f, Device));
  return multilevel_roi_align(maps, at::autocast::cached_cast(at::kFloat, rois, Device), levels,
                              scales, pooled_height, pooled_width, sampling_ratio, aligned)
      .to(features[0].scalar_type());
}

template <c10::DispatchKey AutocastKey, c10::DeviceType Device>
at::Tensor nms_autocast(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(AutocastKey);
  return nms(at::autocast::cached_cast(at::kFloat, boxes, Device),
             at::autocast::cached_cast(at::kFloat, scores, Device), iou_threshold);
}

}  // namespace
}  // namespace mrcnn::ops

TORCH_LIBRARY_IMPL(mrcnn, AutocastCPU, m) {
  m.impl("roi_align",
         TORCH_FN((mrcnn::ops::roi_align_autocast<c10::DispatchKey::AutocastCPU, c10::kCPU>)));
  m.impl("multilevel_roi_align",
         TORCH_FN((
             mrcnn::ops::multilevel_roi_align_autocast<c10::DispatchKey::AutocastCPU, c10::kCPU>)));
  m.impl("nms", TORCH_FN((mrcnn::ops::nms_autocast<c10::DispatchKey::AutocastCPU, c10::kCPU>)));
}

TORCH_LIBRARY_IMPL(mrcnn, AutocastCUDA, m) {
  m.impl("roi_align",
         TORCH_FN((mrcnn::ops::roi_align_autocast<c10::DispatchKey::AutocastCUDA, c10::kCUDA>)));
  m.impl(
      "multilevel_roi_align",
      TORCH_FN(
          (mrcnn::ops::multilevel_roi_align_autocast<c10::DispatchKey::AutocastCUDA, c10::kCUDA>)));
  m.impl("nms", TORCH_FN((mrcnn::ops::nms_autocast<c10::DispatchKey::AutocastCUDA, c10::kCUDA>)));
}

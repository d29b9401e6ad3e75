// Autograd of mrcnn::roi_align: the gradient flows to the input features (not to the RoIs,
// whose gradient is not defined at bin edges; torchvision does the same). The backward op
// itself is not differentiable again.
#include <torch/autograd.h>
#include <torch/library.h>

#include "engine/ops/roi_align.h"

namespace mrcnn::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::Variable;
using torch::autograd::variable_list;

class RoIAlignFunction : public torch::autograd::Function<RoIAlignFunction> {
 public:
  static Variable forward(AutogradContext* ctx, const Variable& input, const Variable& rois,
                          double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                          int64_t sampling_ratio, bool aligned) {
    ctx->saved_data["spatial_scale"] = spatial_scale;
    ctx->saved_data["pooled_height"] = pooled_height;
    ctx->saved_data["pooled_width"] = pooled_width;
    ctx->saved_data["sampling_ratio"] = sampling_ratio;
    ctx->saved_data["aligned"] = aligned;
    ctx->saved_data["input_shape"] = input.sizes();
    ctx->saved_data["channels_last"] =
        input.suggest_memory_format() == at::MemoryFormat::ChannelsLast;
    ctx->save_for_backward({rois});
    at::AutoDispatchBelowADInplaceOrView guard;
    return roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio,
                     aligned);
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_output) {
    const Variable rois = ctx->get_saved_variables()[0];
    const auto shape = ctx->saved_data["input_shape"].toIntVector();
    const Variable grad_input = roi_align_backward(
        grad_output[0], rois, ctx->saved_data["spatial_scale"].toDouble(),
        ctx->saved_data["pooled_height"].toInt(), ctx->saved_data["pooled_width"].toInt(), shape[0],
        shape[1], shape[2], shape[3], ctx->saved_data["sampling_ratio"].toInt(),
        ctx->saved_data["aligned"].toBool(), ctx->saved_data["channels_last"].toBool());
    return {grad_input, Variable(), Variable(), Variable(), Variable(), Variable(), Variable()};
  }
};

class RoIAlignBackwardFunction : public torch::autograd::Function<RoIAlignBackwardFunction> {
 public:
  static Variable forward(AutogradContext* /*ctx*/, const Variable& grad, const Variable& rois,
                          double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                          int64_t batch_size, int64_t channels, int64_t height, int64_t width,
                          int64_t sampling_ratio, bool aligned, bool channels_last) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return roi_align_backward(grad, rois, spatial_scale, pooled_height, pooled_width, batch_size,
                              channels, height, width, sampling_ratio, aligned, channels_last);
  }

  static variable_list backward(AutogradContext* /*ctx*/, const variable_list& /*grad*/) {
    TORCH_CHECK(false, "roi_align: double backward (a gradient of the gradient) is not supported");
  }
};

at::Tensor roi_align_autograd(const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                              int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                              bool aligned) {
  return RoIAlignFunction::apply(input, rois, spatial_scale, pooled_height, pooled_width,
                                 sampling_ratio, aligned);
}

at::Tensor roi_align_backward_autograd(const at::Tensor& grad, const at::Tensor& rois,
                                       double spatial_scale, int64_t pooled_height,
                                       int64_t pooled_width, int64_t batch_size, int64_t channels,
                                       int64_t height, int64_t width, int64_t sampling_ratio,
                                       bool aligned, bool channels_last) {
  return RoIAlignBackwardFunction::apply(grad, rois, spatial_scale, pooled_height, pooled_width,
                                         batch_size, channels, height, width, sampling_ratio,
                                         aligned, channels_last);
}

}  // namespace
}  // namespace mrcnn::ops

TORCH_LIBRARY_IMPL(mrcnn, Autograd, m) {
  m.impl("roi_align", TORCH_FN(mrcnn::ops::roi_align_autograd));
  m.impl("_roi_align_backward", TORCH_FN(mrcnn::ops::roi_align_backward_autograd));
}

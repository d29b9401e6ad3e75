// Autograd of mrcnn::roi_align and mrcnn::multilevel_roi_align: the gradient flows to the
// input features (not to the RoIs, whose gradient is not defined at bin edges; torchvision
// does the same). The backward ops themselves are not differentiable again.
#include <torch/autograd.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/library.h>

#include "engine/ops/multilevel_roi_align.h"
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

// The maps' gradients, one per map; the RoIs, levels and the rest get none.
class MultilevelRoIAlignFunction : public torch::autograd::Function<MultilevelRoIAlignFunction> {
 public:
  static Variable forward(AutogradContext* ctx, at::TensorList features, const Variable& rois,
                          const Variable& levels, at::ArrayRef<double> scales,
                          int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                          bool aligned) {
    std::vector<int64_t> heights, widths;
    for (const at::Tensor& f : features) {
      heights.push_back(f.size(2));
      widths.push_back(f.size(3));
    }
    ctx->saved_data["scales"] = scales.vec();
    ctx->saved_data["heights"] = heights;
    ctx->saved_data["widths"] = widths;
    ctx->saved_data["batch_size"] = features[0].size(0);
    ctx->saved_data["channels"] = features[0].size(1);
    ctx->saved_data["pooled_height"] = pooled_height;
    ctx->saved_data["pooled_width"] = pooled_width;
    ctx->saved_data["sampling_ratio"] = sampling_ratio;
    ctx->saved_data["aligned"] = aligned;
    ctx->saved_data["channels_last"] =
        features[0].suggest_memory_format() == at::MemoryFormat::ChannelsLast;
    ctx->save_for_backward({rois, levels});
    at::AutoDispatchBelowADInplaceOrView guard;
    return multilevel_roi_align(features, rois, levels, scales, pooled_height, pooled_width,
                                sampling_ratio, aligned);
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_output) {
    const variable_list saved = ctx->get_saved_variables();
    const Variable& rois = saved[0];
    const Variable& levels = saved[1];
    const auto& d = ctx->saved_data;
    variable_list grads = multilevel_roi_align_backward(
        grad_output[0], rois, levels, d.at("scales").toDoubleVector(),
        d.at("pooled_height").toInt(), d.at("pooled_width").toInt(), d.at("batch_size").toInt(),
        d.at("channels").toInt(), d.at("heights").toIntVector(), d.at("widths").toIntVector(),
        d.at("sampling_ratio").toInt(), d.at("aligned").toBool(), d.at("channels_last").toBool());
    // rois, levels, scales, pooled_height, pooled_width, sampling_ratio, aligned
    grads.resize(grads.size() + 7);
    return grads;
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

at::Tensor multilevel_roi_align_autograd(at::TensorList features, const at::Tensor& rois,
                                         const at::Tensor& levels, at::ArrayRef<double> scales,
                                         int64_t pooled_height, int64_t pooled_width,
                                         int64_t sampling_ratio, bool aligned) {
  return MultilevelRoIAlignFunction::apply(features, rois, levels, scales, pooled_height,
                                           pooled_width, sampling_ratio, aligned);
}

}  // namespace
}  // namespace mrcnn::ops

TORCH_LIBRARY_IMPL(mrcnn, Autograd, m) {
  m.impl("roi_align", TORCH_FN(mrcnn::ops::roi_align_autograd));
  m.impl("_roi_align_backward", TORCH_FN(mrcnn::ops::roi_align_backward_autograd));
  m.impl("multilevel_roi_align", TORCH_FN(mrcnn::ops::multilevel_roi_align_autograd));
  // Differentiating the gradient is refused by name.
  m.impl("_multilevel_roi_align_backward", torch::autograd::autogradNotImplementedFallback());
}

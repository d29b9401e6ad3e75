#include "engine/prune/flop_count.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <cstring>
#include <memory>
#include <stdexcept>

namespace mrcnn::prune {
namespace {

thread_local int64_t t_multiply_adds = 0;
thread_local bool t_counting = false;

// A convolution's multiply-adds per output element, carried from its start to its end.
struct ConvContext : at::ObserverContext {
  int64_t per_output = 0;
};

int64_t numel(const c10::IValue& v) {
  return v.isTensor() ? v.toTensor().numel() : 0;
}

std::unique_ptr<at::ObserverContext> onStart(const at::RecordFunction& fn) {
  const char* name = fn.name();
  const auto inputs = fn.inputs();
  if (std::strcmp(name, "aten::convolution") == 0 && inputs.size() >= 7 && inputs[0].isTensor() &&
      inputs[1].isTensor()) {
    const at::Tensor& weight =
        inputs[1].toTensor();  // [out, in/g, k..] or transposed [in, out/g, k..]
    int64_t per = weight.size(1);
    for (int64_t d = 2; d < weight.dim(); ++d)
      per *= weight.size(d);
    if (inputs[6].isBool() && inputs[6].toBool()) {
      // A transposed convolution: each input element feeds out/g x k x k outputs.
      t_multiply_adds += inputs[0].toTensor().numel() * per;
      return nullptr;
    }
    auto context = std::make_unique<ConvContext>();
    context->per_output = per;
    return context;
  }
  if ((std::strcmp(name, "aten::addmm") == 0 && inputs.size() >= 3) ||
      ((std::strcmp(name, "aten::mm") == 0 || std::strcmp(name, "aten::bmm") == 0) &&
       inputs.size() >= 2)) {
    const size_t a = std::strcmp(name, "aten::addmm") == 0 ? 1 : 0;
    if (inputs[a].isTensor() && inputs[a + 1].isTensor()) {
      const at::Tensor& m1 = inputs[a].toTensor();  // [.., M, K] x [.., K, N]
      const at::Tensor& m2 = inputs[a + 1].toTensor();
      t_multiply_adds += m1.numel() * m2.size(-1);
    }
  }
  return nullptr;
}

void onEnd(const at::RecordFunction& fn, at::ObserverContext* context) {
  if (context == nullptr) return;
  const auto& outputs = fn.outputs();
  if (!outputs.empty())
    t_multiply_adds += numel(outputs[0]) * static_cast<ConvContext*>(context)->per_output;
}

}  // namespace

FlopCount::FlopCount() {
  if (t_counting) throw std::logic_error("FlopCount: one at a time on a thread");
  t_counting = true;
  t_multiply_adds = 0;
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(onStart, onEnd).needsInputs(true).needsOutputs(true));
}

FlopCount::~FlopCount() {
  at::removeCallback(handle_);
  t_counting = false;
}

int64_t FlopCount::multiplyAdds() const {
  return t_multiply_adds;
}

double inferenceGflops(model::MaskRCNNImpl& net, int64_t height, int64_t width, int64_t rois,
                       int64_t detections) {
  net.eval();
  torch::NoGradGuard no_grad;
  const model::RoIHeadsOptions& heads = net.roiHeads()->options();
  const int64_t channels = net.options().backbone.out_channels;
  at::manual_seed(0);
  const at::Tensor image = at::randn({1, 3, height, width});
  const at::Tensor box_features =
      at::randn({rois, channels, heads.box_roi_size, heads.box_roi_size});
  const at::Tensor mask_features =
      at::randn({detections, channels, heads.mask_roi_size, heads.mask_roi_size});
  FlopCount count;
  net.rpn()->head()->forward(net.backbone()->forward(image));
  net.roiHeads()->boxPredictor()->forward(net.roiHeads()->boxHead()->forward(box_features));
  if (!net.roiHeads()->maskHead().is_empty())
    net.roiHeads()->maskPredictor()->forward(net.roiHeads()->maskHead()->forward(mask_features));
  return 2.0 * static_cast<double>(count.multiplyAdds()) * 1e-9;
}

}  // namespace mrcnn::prune

#include "engine/model/activation_layout.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

namespace mrcnn::model {

std::optional<ActivationLayout> parseActivationLayout(const std::string& name) {
  if (name == "auto") return ActivationLayout::Auto;
  if (name == "nchw") return ActivationLayout::Nchw;
  if (name == "nhwc") return ActivationLayout::Nhwc;
  return std::nullopt;
}

bool channelsLastFor(ActivationLayout layout) {
  return layout != ActivationLayout::Nchw;
}

std::string describeLayout(ActivationLayout layout) {
  const std::string name = channelsLastFor(layout) ? "channels-last (NHWC)" : "NCHW";
  return layout == ActivationLayout::Auto ? "auto: " + name : name;
}

int setConvWeightLayout(torch::nn::Module& module, at::MemoryFormat format) {
  torch::NoGradGuard no_grad;
  int moved = 0;
  for (at::Tensor& p : module.parameters(/*recurse=*/true)) {
    if (p.dim() != 4 || p.is_contiguous(format)) continue;
    p.set_data(p.contiguous(format));
    ++moved;
  }
  return moved;
}

}  // namespace mrcnn::model

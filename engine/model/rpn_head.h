// The RPN head, torchvision's RPNHead: per feature level a shared 3x3 conv + ReLU (conv_depth
// of them), then a 1x1 conv to A objectness logits and a 1x1 conv to 4A box deltas.
//
// Parameter names are torchvision's current ones (RPNHead._version 2), so a state_dict maps
// one to one under the prefix "rpn.head.":
//   conv.0.0.weight, conv.0.0.bias   (conv.<i>.0.* for conv_depth > 1)
//   cls_logits.weight, cls_logits.bias, bbox_pred.weight, bbox_pred.bias
// torchvision before RPNHead._version 2 (checkpoints of torchvision < 0.13, among them the
// COCO weights' original files) named the single conv "conv.weight" and "conv.bias";
// legacyParameterNames() lists that mapping for the state_dict loader.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <utility>
#include <vector>

namespace mrcnn::model {

struct RPNHeadOptions {
  int64_t in_channels = 256;
  int64_t num_anchors = 3;  // per location
  int64_t conv_depth = 1;
  // A pruned head: each 3x3 conv's output channels (conv_depth of them); empty: in_channels.
  std::vector<int64_t> conv_channels{};
};

// The head's outputs: objectness logits and box deltas, one map of each per level.
using RPNHeadMaps = std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>>;

class RPNHeadImpl : public torch::nn::Module {
 public:
  explicit RPNHeadImpl(RPNHeadOptions options = {});

  // features: one [N, C, H_l, W_l] per level. Returns the objectness logits [N, A, H_l, W_l]
  // and box deltas [N, 4A, H_l, W_l] per level (deltas ordered anchor major, (dx, dy, dw, dh)
  // minor, as torchvision).
  RPNHeadMaps forward(const std::vector<at::Tensor>& features);

  // Re-initialises as torchvision: weights normal(0, 0.01), biases 0 (ATen's default
  // generator). The constructor does this.
  void resetParameters();

  const RPNHeadOptions& options() const { return options_; }

  // torchvision's current parameter names, in registration order.
  static std::vector<std::string> parameterNames(int64_t conv_depth = 1);
  // (old name, current name) of torchvision's RPNHead before _version 2.
  static std::vector<std::pair<std::string, std::string>> legacyParameterNames();

 private:
  RPNHeadOptions options_;
  torch::nn::ModuleList conv_{nullptr};        // "conv": one block per conv_depth
  std::vector<torch::nn::Sequential> blocks_;  // its blocks: 3x3 conv, ReLU
  torch::nn::Conv2d cls_logits_{nullptr};
  torch::nn::Conv2d bbox_pred_{nullptr};
};

TORCH_MODULE(RPNHead);

}  // namespace mrcnn::model

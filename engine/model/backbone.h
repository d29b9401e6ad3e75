// The backbone: a ResNet body and a feature pyramid, torchvision's BackboneWithFPN. Its
// state_dict keys are torchvision's under "backbone." in a Mask R-CNN state_dict:
// body.* (see resnet.h) and fpn.* (see fpn.h).
//
// Levels: the body's layer<l-1> feeds pyramid level l (stride 2^l) for l = min_level..5;
// max_level 6 adds torchvision's "pool" level. torchvision's maskrcnn_resnet50_fpn is
// min_level 2, max_level 6 (its returned_layers [1, 2, 3, 4] with LastLevelMaxPool).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/model/fpn.h"
#include "engine/model/resnet.h"
#include "engine/model/state_dict.h"

namespace mrcnn::model {

struct BackboneOptions {
  ResNetOptions resnet;
  int min_level = 2;  // 2..5
  int max_level = 6;  // 5 or 6
  int64_t out_channels = 256;
};

class BackboneWithFPNImpl : public torch::nn::Module {
 public:
  explicit BackboneWithFPNImpl(BackboneOptions options = {});

  // images [N, 3, H, W], normalised, H and W multiples of 2^max_level. Returns one map
  // [N, out_channels, H / 2^l, W / 2^l] per level l = min_level..max_level.
  std::vector<at::Tensor> forward(const at::Tensor& images);

  ResNet& body() { return body_; }
  FeaturePyramidNetwork& fpn() { return fpn_; }
  const BackboneOptions& options() const { return options_; }

  // Loads the keys under options.prefix ("backbone." in a Mask R-CNN state_dict) of a torchvision
  // state_dict, old FPN names included; frozen batch norms are unfolded (fold again after loading).
  LoadReport loadTorchvisionState(const StateDict& state, LoadOptions options);
  // Our weights under torchvision's names, under `prefix`.
  StateDict torchvisionState(const std::string& prefix = "backbone.") const;

  // (old name, current name) pairs, relative to the backbone.
  std::vector<std::pair<std::string, std::string>> legacyParameterNames() const;

 private:
  BackboneOptions options_;
  ResNet body_{nullptr};
  FeaturePyramidNetwork fpn_{nullptr};
};
TORCH_MODULE(BackboneWithFPN);

}  // namespace mrcnn::model

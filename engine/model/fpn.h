// The feature pyramid, torchvision's FeaturePyramidNetwork with LastLevelMaxPool: per input
// level a 1x1 lateral conv ("inner_blocks.<i>.0") and a 3x3 output conv ("layer_blocks.<i>.0"),
// top-down by nearest upsampling to the lateral's size, and optionally one more level,
// max_pool2d(kernel 1, stride 2) of the coarsest output (torchvision's "pool").
//
// Parameter names are torchvision's current ones (FeaturePyramidNetwork version 2); before
// it torchvision named them "inner_blocks.<i>.weight": legacyParameterNames() maps those.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <utility>
#include <vector>

namespace mrcnn::model {

struct FeaturePyramidOptions {
  std::vector<int64_t> in_channels;  // finest level first
  int64_t out_channels = 256;
  bool extra_max_pool = true;  // LastLevelMaxPool
};

class FeaturePyramidNetworkImpl : public torch::nn::Module {
 public:
  explicit FeaturePyramidNetworkImpl(FeaturePyramidOptions options);

  // features: one map per in_channels entry, finest first. Returns the outputs finest
  // first, plus the pooled level when extra_max_pool.
  std::vector<at::Tensor> forward(const std::vector<at::Tensor>& features);

  // (old name, current name) pairs, relative to the FPN.
  std::vector<std::pair<std::string, std::string>> legacyParameterNames() const;

  const FeaturePyramidOptions& options() const { return options_; }

 private:
  FeaturePyramidOptions options_;
  std::vector<torch::nn::Conv2d> inner_, layer_;
};
TORCH_MODULE(FeaturePyramidNetwork);

}  // namespace mrcnn::model

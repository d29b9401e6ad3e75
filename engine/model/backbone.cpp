#include "engine/model/backbone.h"

#include <torch/torch.h>

#include <stdexcept>

namespace mrcnn::model {

BackboneWithFPNImpl::BackboneWithFPNImpl(BackboneOptions options) : options_(std::move(options)) {
  if (options_.min_level < 2 || options_.min_level > 5)
    throw std::invalid_argument("min_level must be 2 to 5 (the strides of layer1..layer4), got " +
                                std::to_string(options_.min_level));
  if (options_.max_level != 5 && options_.max_level != 6)
    throw std::invalid_argument("max_level must be 5 or 6 (6 adds the max-pooled level), got " +
                                std::to_string(options_.max_level));
  body_ = register_module("body", ResNet(options_.resnet));
  FeaturePyramidOptions fpn;
  const auto channels = body_->stageChannels();
  for (int level = options_.min_level; level <= 5; ++level)
    fpn.in_channels.push_back(channels[static_cast<size_t>(level - 2)]);
  fpn.out_channels = options_.out_channels;
  fpn.extra_max_pool = options_.max_level == 6;
  fpn_ = register_module("fpn", FeaturePyramidNetwork(fpn));
}

std::vector<at::Tensor> BackboneWithFPNImpl::forward(const at::Tensor& images) {
  std::vector<at::Tensor> c = body_->forward(images);
  c.erase(c.begin(), c.begin() + (options_.min_level - 2));
  return fpn_->forward(c);
}

std::vector<std::pair<std::string, std::string>> BackboneWithFPNImpl::legacyParameterNames() const {
  auto names = fpn_->legacyParameterNames();
  for (auto& [old_name, new_name] : names) {
    old_name = "fpn." + old_name;
    new_name = "fpn." + new_name;
  }
  return names;
}

LoadReport BackboneWithFPNImpl::loadTorchvisionState(const StateDict& state, LoadOptions options) {
  const auto legacy = legacyParameterNames();
  options.legacy_names.insert(options.legacy_names.end(), legacy.begin(), legacy.end());
  body_->unfoldBatchNorm();
  return loadStateDict(*this, state, options);
}

StateDict BackboneWithFPNImpl::torchvisionState(const std::string& prefix) const {
  return stateDictOf(*this, prefix);
}

}  // namespace mrcnn::model

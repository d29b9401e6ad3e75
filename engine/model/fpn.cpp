#include "engine/model/fpn.h"

#include <torch/torch.h>

#include <stdexcept>

namespace mrcnn::model {

FeaturePyramidNetworkImpl::FeaturePyramidNetworkImpl(FeaturePyramidOptions options)
    : options_(std::move(options)) {
  if (options_.in_channels.empty())
    throw std::invalid_argument("FeaturePyramidNetwork: no input levels");
  auto inner_blocks = register_module("inner_blocks", std::make_shared<torch::nn::Module>());
  auto layer_blocks = register_module("layer_blocks", std::make_shared<torch::nn::Module>());
  const int64_t c = options_.out_channels;
  for (size_t i = 0; i < options_.in_channels.size(); ++i) {
    const int64_t in = options_.in_channels[i];
    if (in <= 0)
      throw std::invalid_argument("FeaturePyramidNetwork: input channels must be positive");
    // torchvision wraps each conv in a Conv2dNormActivation (a Sequential): hence ".0".
    torch::nn::Conv2d inner(torch::nn::Conv2dOptions(in, c, /*kernel_size=*/1));
    torch::nn::Conv2d layer(torch::nn::Conv2dOptions(c, c, /*kernel_size=*/3).padding(1));
    const std::string name = std::to_string(i);
    inner_blocks->register_module(name, std::make_shared<torch::nn::Module>())
        ->register_module("0", inner);
    layer_blocks->register_module(name, std::make_shared<torch::nn::Module>())
        ->register_module("0", layer);
    inner_.push_back(inner);
    layer_.push_back(layer);
  }
  torch::NoGradGuard no_grad;
  for (auto* list : {&inner_, &layer_}) {
    for (auto& conv : *list) {
      torch::nn::init::kaiming_uniform_(conv->weight, /*a=*/1);
      torch::nn::init::zeros_(conv->bias);
    }
  }
}

std::vector<at::Tensor> FeaturePyramidNetworkImpl::forward(
    const std::vector<at::Tensor>& features) {
  const size_t n = inner_.size();
  TORCH_CHECK(features.size() == n, "FeaturePyramidNetwork: expected ", n, " feature maps, got ",
              features.size());
  std::vector<at::Tensor> results(n);
  at::Tensor last_inner = inner_[n - 1]->forward(features[n - 1]);
  results[n - 1] = layer_[n - 1]->forward(last_inner);
  for (size_t i = n - 1; i-- > 0;) {
    const at::Tensor lateral = inner_[i]->forward(features[i]);
    const at::Tensor top_down = torch::upsample_nearest2d(
        last_inner, {lateral.size(-2), lateral.size(-1)}, std::nullopt, std::nullopt);
    last_inner = lateral + top_down;
    results[i] = layer_[i]->forward(last_inner);
  }
  if (options_.extra_max_pool) {
    results.push_back(torch::max_pool2d(results.back(), /*kernel_size=*/{1, 1},
                                        /*stride=*/{2, 2}, /*padding=*/{0, 0}));
  }
  return results;
}

std::vector<std::pair<std::string, std::string>> FeaturePyramidNetworkImpl::legacyParameterNames()
    const {
  std::vector<std::pair<std::string, std::string>> names;
  for (const char* block : {"inner_blocks", "layer_blocks"}) {
    for (size_t i = 0; i < inner_.size(); ++i) {
      for (const char* p : {"weight", "bias"}) {
        const std::string base = std::string(block) + "." + std::to_string(i) + ".";
        names.emplace_back(base + p, base + "0." + p);
      }
    }
  }
  return names;
}

}  // namespace mrcnn::model

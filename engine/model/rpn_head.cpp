#include "engine/model/rpn_head.h"

#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/options/conv.h>

namespace mrcnn::model {

RPNHeadImpl::RPNHeadImpl(RPNHeadOptions options) : options_(options) {
  TORCH_CHECK(options_.in_channels > 0 && options_.num_anchors > 0 && options_.conv_depth >= 1,
              "RPNHead: in_channels, num_anchors and conv_depth must be positive (got ",
              options_.in_channels, ", ", options_.num_anchors, ", ", options_.conv_depth, ")");
  TORCH_CHECK(options_.conv_channels.empty() ||
                  static_cast<int64_t>(options_.conv_channels.size()) == options_.conv_depth,
              "RPNHead: conv_channels names ", options_.conv_channels.size(),
              " widths for conv_depth ", options_.conv_depth);
  int64_t c = options_.in_channels;
  // conv.<i> is torchvision's Conv2dNormActivation (a Sequential of conv and ReLU, no norm),
  // hence the names conv.<i>.0.weight.
  // (A Sequential cannot hold a Sequential in LibTorch: the outer level is a ModuleList.)
  conv_ = torch::nn::ModuleList();
  for (int64_t i = 0; i < options_.conv_depth; ++i) {
    const int64_t out =
        options_.conv_channels.empty() ? c : options_.conv_channels[static_cast<size_t>(i)];
    TORCH_CHECK(out > 0, "RPNHead: conv ", i, " has ", out, " output channels");
    blocks_.emplace_back(
        torch::nn::Conv2d(torch::nn::Conv2dOptions(c, out, /*kernel_size=*/3).padding(1)),
        torch::nn::ReLU(torch::nn::ReLUOptions(/*inplace=*/true)));
    conv_->push_back(blocks_.back());
    c = out;
  }
  register_module("conv", conv_);
  cls_logits_ = register_module(
      "cls_logits", torch::nn::Conv2d(torch::nn::Conv2dOptions(c, options_.num_anchors, 1)));
  bbox_pred_ = register_module(
      "bbox_pred", torch::nn::Conv2d(torch::nn::Conv2dOptions(c, 4 * options_.num_anchors, 1)));
  resetParameters();
}

void RPNHeadImpl::resetParameters() {
  torch::NoGradGuard no_grad;
  for (auto& item : named_parameters()) {
    at::Tensor& p = item.value();
    if (item.key().ends_with(".weight")) {
      torch::nn::init::normal_(p, /*mean=*/0.0, /*std=*/0.01);
    } else {
      torch::nn::init::zeros_(p);
    }
  }
}

std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> RPNHeadImpl::forward(
    const std::vector<at::Tensor>& features) {
  std::vector<at::Tensor> logits, deltas;
  logits.reserve(features.size());
  deltas.reserve(features.size());
  for (const at::Tensor& f : features) {
    TORCH_CHECK(f.dim() == 4 && f.size(1) == options_.in_channels,
                "RPNHead: expected features [N, ", options_.in_channels, ", H, W], got ",
                f.sizes());
    at::Tensor t = f;
    for (torch::nn::Sequential& block : blocks_)
      t = block->forward(t);
    logits.push_back(cls_logits_->forward(t));
    deltas.push_back(bbox_pred_->forward(t));
  }
  return {std::move(logits), std::move(deltas)};
}

std::vector<std::string> RPNHeadImpl::parameterNames(int64_t conv_depth) {
  std::vector<std::string> names;
  for (int64_t i = 0; i < conv_depth; ++i) {
    names.push_back("conv." + std::to_string(i) + ".0.weight");
    names.push_back("conv." + std::to_string(i) + ".0.bias");
  }
  for (const char* n :
       {"cls_logits.weight", "cls_logits.bias", "bbox_pred.weight", "bbox_pred.bias"})
    names.emplace_back(n);
  return names;
}

std::vector<std::pair<std::string, std::string>> RPNHeadImpl::legacyParameterNames() {
  return {{"conv.weight", "conv.0.0.weight"}, {"conv.bias", "conv.0.0.bias"}};
}

}  // namespace mrcnn::model

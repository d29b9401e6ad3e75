#include "engine/model/box_head.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/nn/options/linear.h>

namespace mrcnn::model {

TwoMLPHeadImpl::TwoMLPHeadImpl(int64_t in_channels, int64_t representation_size) {
  TORCH_CHECK(in_channels > 0 && representation_size > 0,
              "TwoMLPHead: in_channels and representation_size must be positive (got ", in_channels,
              ", ", representation_size, ")");
  fc6_ = register_module("fc6", torch::nn::Linear(in_channels, representation_size));
  fc7_ = register_module("fc7", torch::nn::Linear(representation_size, representation_size));
}

at::Tensor TwoMLPHeadImpl::forward(const at::Tensor& x) {
  const at::Tensor flat = x.flatten(/*start_dim=*/1);
  TORCH_CHECK(flat.size(1) == fc6_->options.in_features(), "TwoMLPHead: expected ",
              fc6_->options.in_features(), " features per RoI, got ", flat.size(1), " (input ",
              x.sizes(), ")");
  return at::relu(fc7_->forward(at::relu(fc6_->forward(flat))));
}

FastRCNNPredictorImpl::FastRCNNPredictorImpl(int64_t in_channels, int64_t num_classes) {
  TORCH_CHECK(in_channels > 0 && num_classes >= 2,
              "FastRCNNPredictor: in_channels must be positive and num_classes at least 2 "
              "(background and one class), got ",
              in_channels, ", ", num_classes);
  cls_score_ = register_module("cls_score", torch::nn::Linear(in_channels, num_classes));
  bbox_pred_ = register_module("bbox_pred", torch::nn::Linear(in_channels, 4 * num_classes));
}

std::pair<at::Tensor, at::Tensor> FastRCNNPredictorImpl::forward(const at::Tensor& x) {
  // torchvision accepts [R, C, 1, 1] as well.
  TORCH_CHECK(x.dim() == 2 || (x.dim() == 4 && x.size(2) == 1 && x.size(3) == 1),
              "FastRCNNPredictor: expected [R, C] or [R, C, 1, 1], got ", x.sizes());
  const at::Tensor flat = x.flatten(/*start_dim=*/1);
  return {cls_score_->forward(flat), bbox_pred_->forward(flat)};
}

}  // namespace mrcnn::model

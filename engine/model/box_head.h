// The box branch of the RoI heads, torchvision's TwoMLPHead and FastRCNNPredictor: the 7x7
// RoIAlign features flattened through two fully connected layers with ReLU (fc6, fc7; the
// spec's fast_rcnn_mlp_head_dim wide), then one linear layer to the class logits
// (cls_score) and one to class-specific box deltas (bbox_pred, (dx, dy, dw, dh) per class,
// class major). State_dict names: box_head.fc6.*, box_head.fc7.*,
// box_predictor.cls_score.*, box_predictor.bbox_pred.*. Weights start as torch.nn.Linear's
// default, as torchvision leaves them.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <utility>

namespace mrcnn::model {

class TwoMLPHeadImpl : public torch::nn::Module {
 public:
  // in_channels: the flattened RoI feature size (channels * 7 * 7).
  TwoMLPHeadImpl(int64_t in_channels, int64_t representation_size);
  at::Tensor forward(const at::Tensor& x);  // [R, C, S, S] or [R, C*S*S] -> [R, representation]

 private:
  torch::nn::Linear fc6_{nullptr};
  torch::nn::Linear fc7_{nullptr};
};
TORCH_MODULE(TwoMLPHead);

class FastRCNNPredictorImpl : public torch::nn::Module {
 public:
  FastRCNNPredictorImpl(int64_t in_channels, int64_t num_classes);
  // x [R, in] -> class logits [R, num_classes], box deltas [R, 4 * num_classes].
  std::pair<at::Tensor, at::Tensor> forward(const at::Tensor& x);

 private:
  torch::nn::Linear cls_score_{nullptr};
  torch::nn::Linear bbox_pred_{nullptr};
};
TORCH_MODULE(FastRCNNPredictor);

}  // namespace mrcnn::model

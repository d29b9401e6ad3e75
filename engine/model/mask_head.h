// The mask branch of the RoI heads, torchvision's MaskRCNNHeads and MaskRCNNPredictor: four
// 3x3 convolutions with ReLU on the 14x14 RoIAlign features, a 2x2 stride-2 transposed
// convolution with ReLU, and a 1x1 convolution to one mask logit map per class (28x28 with
// the defaults: the spec's mrcnn_resolution). State_dict names: mask_head.<i>.0.{weight,bias}
// (old names mask_head.mask_fcn<i+1>.*), mask_predictor.conv5_mask.*,
// mask_predictor.mask_fcn_logits.*.
//
// Training: the loss is BCE with logits between each positive RoI's logit map of its ground
// truth class and the ground-truth mask cropped to the RoI and resized to the map's size
// (mask targets: RoIAlign of the mask, torchvision's project_masks_on_boxes), averaged over
// every pixel of every positive RoI. Inference: the sigmoid of each detection's class map.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/cropped_masks.h"

namespace mrcnn::model {

struct MaskHeadOptions {
  int64_t in_channels = 256;
  std::vector<int64_t> layers{256, 256, 256, 256};  // the four 3x3 convolutions' widths
  int64_t dilation = 1;
  int64_t num_classes = 91;  // including background
};

// The four convolutions (each Conv2d + ReLU as torchvision's Conv2dNormActivation without norm).
class MaskRCNNHeadsImpl : public torch::nn::Module {
 public:
  explicit MaskRCNNHeadsImpl(const MaskHeadOptions& options = {});
  at::Tensor forward(const at::Tensor& x);  // [R, in, 14, 14] -> [R, layers.back(), 14, 14]
  // (old name, current name) pairs relative to the module: torchvision before
  // MaskRCNNHeads._version 2 named block <i> "mask_fcn<i+1>".
  std::vector<std::pair<std::string, std::string>> legacyParameterNames() const;

 private:
  int64_t in_channels_ = 0;
  std::vector<torch::nn::Sequential> blocks_;  // "<i>": 3x3 conv, ReLU
};
TORCH_MODULE(MaskRCNNHeads);

class MaskRCNNPredictorImpl : public torch::nn::Module {
 public:
  MaskRCNNPredictorImpl(int64_t in_channels, int64_t dim_reduced, int64_t num_classes);
  at::Tensor forward(const at::Tensor& x);  // [R, in, 14, 14] -> [R, num_classes, 28, 28]

 private:
  int64_t in_channels_ = 0;
  torch::nn::ConvTranspose2d conv5_mask_{nullptr};
  torch::nn::ReLU relu_{nullptr};
  torch::nn::Conv2d mask_fcn_logits_{nullptr};
};
TORCH_MODULE(MaskRCNNPredictor);

// torchvision's maskrcnn_loss. mask_logits [R, C, M, M] for the positive RoIs of all images
// (in image order); per image: its positive proposals [P_i, 4], its ground-truth masks
// uint8 [G_i, H, W] (image size after the transform), ground-truth labels int64 [G_i] and
// each positive proposal's matched ground-truth index [P_i]. Returns a 0-dim tensor;
// mask_logits.sum() * 0 when there is no positive RoI.
at::Tensor maskRCNNLoss(const at::Tensor& mask_logits, const std::vector<at::Tensor>& proposals,
                        const std::vector<at::Tensor>& gt_masks,
                        const std::vector<at::Tensor>& gt_labels,
                        const std::vector<at::Tensor>& matched_idxs);
// The same loss with each image's ground-truth masks as the loader crops them: the targets
// read from the crops (ops::mask_targets_cropped), the same values bit for bit, no mask made
// whole. The crops, labels and indices on the proposals' device.
at::Tensor maskRCNNLoss(const at::Tensor& mask_logits, const std::vector<at::Tensor>& proposals,
                        const std::vector<CroppedMasks>& gt_masks,
                        const std::vector<at::Tensor>& gt_labels,
                        const std::vector<at::Tensor>& matched_idxs);

// torchvision's maskrcnn_inference: per image, the sigmoid of each detection's class map,
// [K_i, 1, M, M]. labels: per image [K_i] int64; mask_logits [sum K_i, C, M, M].
std::vector<at::Tensor> maskRCNNInference(const at::Tensor& mask_logits,
                                          const std::vector<at::Tensor>& labels);

}  // namespace mrcnn::model

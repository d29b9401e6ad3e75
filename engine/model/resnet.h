// ResNet backbones (depths 10, 18, 34, 50, 101) with torchvision's module and parameter
// names, so that `body.*` of a torchvision detection backbone maps one to one:
//   conv1.weight, bn1.{weight,bias,running_mean,running_var[,num_batches_tracked]},
//   layer<s>.<b>.conv<k>.weight, layer<s>.<b>.bn<k>.*, layer<s>.<b>.downsample.{0,1}.*
// The classifier (avgpool, fc) is not built: detection uses the four stage outputs only.
//
// Depths 18 and 34 use BasicBlock, 50 and 101 Bottleneck with the stride on the 3x3 conv
// (torchvision's "ResNet v1.5"). Depth 10 is not in torchvision: it is TAO's ResNet-10, one
// BasicBlock per stage ([1, 1, 1, 1]), in the same layout.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/frozen_batch_norm.h"
#include "engine/model/sync_batch_norm.h"

namespace mrcnn::model {

struct ResNetOptions {
  int depth = 50;         // 10, 18, 34, 50 or 101
  bool frozen_bn = true;  // FrozenBatchNorm2d; false: trainable torch::nn::BatchNorm2d
  double frozen_bn_eps = 1e-5;
  // Data-parallel training (trainable batch norm only): the all-reduce that makes every batch
  // norm a SyncBatchNorm2d over the global batch (sync_batch_norm.h). Empty: BatchNorm2d.
  TensorReducer batch_norm_reducer;
  // Blocks whose parameters get requires_grad false: 0 = the stem (conv1, bn1), 1..4 =
  // layer1..layer4. torchvision's trainable_layers = k is {0, ..., 4 - k}.
  std::vector<int> freeze_blocks = {0, 1};
  // A pruned body: the output channels of the convolutions named here (torchvision's names
  // relative to the body without ".weight": conv1, layer<s>.<b>.conv<k>,
  // layer<s>.<b>.downsample.0); the others keep the depth's standard width. Each block's
  // output (its last convolution, its projection) must equal what the next block adds to it:
  // the constructor throws std::invalid_argument naming the first that does not.
  std::map<std::string, int64_t> widths{};
};

// torchvision's trainable_layers (0..5) as freeze_blocks.
std::vector<int> freezeBlocksForTrainableLayers(int trainable_layers);

class ResidualBlock;  // BasicBlock or Bottleneck, defined in resnet.cpp

class ResNetImpl : public torch::nn::Module {
 public:
  explicit ResNetImpl(ResNetOptions options = {});

  // The outputs of layer1..layer4 (C2..C5: strides 4, 8, 16, 32).
  std::vector<at::Tensor> forward(const at::Tensor& images);

  // Output channels of layer1..layer4: 64..512 (BasicBlock), 256..2048 (Bottleneck), fewer
  // when pruned.
  std::array<int64_t, 4> stageChannels() const { return stage_channels_; }

  // Inference speed: every frozen batch norm is folded into the convolution before it
  // (the folded weights are kept beside the modules; names and state_dict are unchanged).
  // Call after the weights are final; train(true) and unfoldBatchNorm() undo it.
  // Returns the number of convolutions folded.
  int foldFrozenBatchNorm();
  void unfoldBatchNorm();
  bool folded() const { return folded_; }

  void train(bool on = true) override;

  // Sets requires_grad per freeze_blocks (done by the constructor; again after loading).
  void applyFreezeBlocks();

  const ResNetOptions& options() const { return options_; }

 private:
  ResNetOptions options_;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::AnyModule bn1_;
  std::array<std::vector<std::shared_ptr<ResidualBlock>>, 4> stages_;
  std::array<int64_t, 4> stage_channels_{};
  FoldedConv stem_;  // folded conv1 + bn1
  bool folded_ = false;
};
TORCH_MODULE(ResNet);

}  // namespace mrcnn::model

// FrozenBatchNorm2d: BatchNorm2d with fixed statistics and affine parameters, equal to
// torchvision.ops.FrozenBatchNorm2d (the four are buffers, so a state_dict holds the same
// keys and an optimizer never sees them), and folding it into the convolution before it.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace mrcnn::model {

class FrozenBatchNorm2dImpl : public torch::nn::Module {
 public:
  // eps: torchvision's default is 1e-5; its COCO_V1 Mask R-CNN weights were trained with a
  // FrozenBatchNorm2d of eps 0 and torchvision sets 0 when it loads them (overwrite_eps).
  explicit FrozenBatchNorm2dImpl(int64_t num_features, double eps = 1e-5);

  at::Tensor forward(const at::Tensor& x);

  // y = x * scale + shift, per channel.
  at::Tensor scale() const;
  at::Tensor shift() const;

  int64_t num_features;
  double eps;
  at::Tensor weight, bias, running_mean, running_var;
};
TORCH_MODULE(FrozenBatchNorm2d);

// A convolution with a frozen batch norm after it, as one convolution: weight * scale per
// output channel, bias = conv_bias * scale + shift. conv_bias may be undefined.
struct FoldedConv {
  at::Tensor weight;
  at::Tensor bias;
};
FoldedConv foldIntoConv(const at::Tensor& conv_weight, const at::Tensor& conv_bias,
                        const FrozenBatchNorm2dImpl& bn);

// Sets eps of every FrozenBatchNorm2d under `module` (torchvision's overwrite_eps).
void setFrozenBatchNormEps(torch::nn::Module& module, double eps);

}  // namespace mrcnn::model

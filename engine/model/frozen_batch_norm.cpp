#include "engine/model/frozen_batch_norm.h"

#include <torch/torch.h>

namespace mrcnn::model {

FrozenBatchNorm2dImpl::FrozenBatchNorm2dImpl(int64_t features, double epsilon)
    : num_features(features), eps(epsilon) {
  TORCH_CHECK(features > 0, "FrozenBatchNorm2d: num_features must be positive, got ", features);
  weight = register_buffer("weight", torch::ones({features}));
  bias = register_buffer("bias", torch::zeros({features}));
  running_mean = register_buffer("running_mean", torch::zeros({features}));
  running_var = register_buffer("running_var", torch::ones({features}));
}

// The same operations in the same order as torchvision's, so that results agree to the bit.
at::Tensor FrozenBatchNorm2dImpl::scale() const {
  return weight.reshape({1, -1, 1, 1}) * (running_var.reshape({1, -1, 1, 1}) + eps).rsqrt();
}

at::Tensor FrozenBatchNorm2dImpl::shift() const {
  return bias.reshape({1, -1, 1, 1}) - running_mean.reshape({1, -1, 1, 1}) * scale();
}

at::Tensor FrozenBatchNorm2dImpl::forward(const at::Tensor& x) {
  const at::Tensor s = scale();
  const at::Tensor b = bias.reshape({1, -1, 1, 1}) - running_mean.reshape({1, -1, 1, 1}) * s;
  return x * s + b;
}

FoldedConv foldIntoConv(const at::Tensor& conv_weight, const at::Tensor& conv_bias,
                        const FrozenBatchNorm2dImpl& bn) {
  TORCH_CHECK(conv_weight.dim() == 4 && conv_weight.size(0) == bn.num_features,
              "foldIntoConv: a convolution of ", conv_weight.sizes(),
              " cannot be folded with a batch norm of ", bn.num_features, " channels");
  torch::NoGradGuard no_grad;
  const at::Tensor s = bn.scale().reshape({-1});
  const at::Tensor t = bn.shift().reshape({-1});
  FoldedConv folded;
  folded.weight = conv_weight * s.reshape({-1, 1, 1, 1});
  folded.bias = conv_bias.defined() ? conv_bias * s + t : t;
  return folded;
}

void setFrozenBatchNormEps(torch::nn::Module& module, double eps) {
  for (const auto& m : module.modules(/*include_self=*/true)) {
    if (auto* bn = m->as<FrozenBatchNorm2dImpl>()) bn->eps = eps;
  }
}

}  // namespace mrcnn::model

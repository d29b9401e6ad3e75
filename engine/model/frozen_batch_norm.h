// FrozenBatchNorm2d: BatchNorm2d with fixed statistics and affine parameters, equal to
// torchvision.ops.FrozenBatchNorm2d (the four are buffers, so a state_dict holds the same
// keys and an optimizer never sees them), and folding it into the convolution before it.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <utility>

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

 private:
  // forward's scale and shift ([1, C, 1, 1]), kept while the four buffers and eps stay as
  // they are: the same storage (a move or set_data gives another) at the same version (an
  // in-place load bumps it). On a GPU that spares five small kernels a layer and call.
  struct Affine {
    at::Tensor scale, shift;
    std::array<c10::Storage, 4> storages;  // weight, bias, running_mean, running_var
    std::array<int64_t, 4> versions{};
    double eps = 0;
  };
  std::pair<at::Tensor, at::Tensor> affine();
  Affine affine_;
  std::mutex affine_mutex_;  // inference may run one model from several threads
};
TORCH_MODULE(FrozenBatchNorm2d);

// A convolution with a frozen batch norm after it, as one convolution: weight * scale per
// output channel, bias = conv_bias * scale + shift. conv_bias may be undefined.
struct FoldedConv {
  at::Tensor weight;
  at::Tensor bias;
  // bfloat16 copies for inference under CPU autocast, made on first use (autocast would cast
  // the weights again at every call).
  at::Tensor weight_bf16, bias_bf16;
};
FoldedConv foldIntoConv(const at::Tensor& conv_weight, const at::Tensor& conv_bias,
                        const FrozenBatchNorm2dImpl& bn);
// Inference through a folded convolution (no autograd): relu(conv(x) + residual), the
// residual and the ReLU optional. On the CPU in float32 or bfloat16 (CPU autocast) this is
// one oneDNN convolution with the addition and ReLU fused as post-ops (mkldnn's pointwise
// convolution, LibTorch's own kernel), sparing one or two passes over the output; elsewhere
// plain convolution, add and ReLU. Under CPU autocast x is cast to its dtype, as conv2d's
// autocast would.
at::Tensor convolveFolded(FoldedConv& conv, const at::Tensor& x, int64_t stride, int64_t padding,
                          bool relu, const at::Tensor& residual = {});

// Sets eps of every FrozenBatchNorm2d under `module` (torchvision's overwrite_eps).
void setFrozenBatchNormEps(torch::nn::Module& module, double eps);

}  // namespace mrcnn::model

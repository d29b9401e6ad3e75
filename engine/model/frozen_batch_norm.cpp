#include "engine/model/frozen_batch_norm.h"

#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <optional>
#include <tuple>
#include <vector>

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
  // Half or bfloat16 activations on a GPU (mixed precision): one batch-norm kernel in eval
  // mode (statistics in float, the result in the activations' dtype). torchvision's float
  // multiply-add below promotes them to float instead, and the next convolution casts them
  // back: on an H100 those float passes (with the ReLUs between) took ~20% of a ResNet-50
  // FPN training step's GPU time. Float inputs and the CPU keep torchvision's arithmetic.
  if (x.is_cuda() && (x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16)) {
    return at::batch_norm(x, weight, bias, running_mean, running_var, /*training=*/false,
                          /*momentum=*/0.0, eps, /*cudnn_enabled=*/true);
  }
  const auto [s, b] = affine();
  return x * s + b;
}

std::pair<at::Tensor, at::Tensor> FrozenBatchNorm2dImpl::affine() {
  const std::array<const at::Tensor*, 4> buffers = {&weight, &bias, &running_mean, &running_var};
  // Buffers without a version to watch (made in inference mode): computed at each call.
  bool cacheable = true;
  for (const at::Tensor* t : buffers)
    cacheable = cacheable && t->unsafeGetTensorImpl()->version_counter().enabled();
  // Outside inference mode, so that training may save them for the backward; no autograd
  // (buffers need none).
  c10::InferenceMode normal_tensors(false);
  at::NoGradGuard no_grad;
  const auto compute = [this] {
    const at::Tensor s = scale();
    return std::make_pair(
        s, bias.reshape({1, -1, 1, 1}) - running_mean.reshape({1, -1, 1, 1}) * s);
  };
  if (!cacheable) return compute();
  std::lock_guard<std::mutex> lock(affine_mutex_);
  bool current = affine_.scale.defined() && affine_.eps == eps;
  for (size_t i = 0; i < buffers.size() && current; ++i) {
    current = buffers[i]->storage().is_alias_of(affine_.storages[i]) &&
              buffers[i]->_version() == affine_.versions[i];
  }
  if (!current) {
    auto [s, b] = compute();
    // Written into the tensors handed out before when they fit: a CUDA graph recorded with
    // them reads them at their address on every replay (engine/runtime/graphed_callable.h,
    // whose recording copies the buffers back, a new version, after its warm-up), and would
    // read freed memory if they were replaced. Another shape, dtype or device (a move, which
    // has recordings made again) gives new ones.
    if (affine_.scale.defined() && affine_.scale.sizes() == s.sizes() &&
        affine_.scale.options().type_equal(s.options()) && affine_.scale.device() == s.device()) {
      affine_.scale.copy_(s);
      affine_.shift.copy_(b);
    } else {
      affine_.scale = std::move(s);
      affine_.shift = std::move(b);
    }
    for (size_t i = 0; i < buffers.size(); ++i) {
      affine_.storages[i] = buffers[i]->storage();
      affine_.versions[i] = buffers[i]->_version();
    }
    affine_.eps = eps;
  }
  return {affine_.scale, affine_.shift};
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

namespace {

// LibTorch's oneDNN convolutions with fused post-ops (the kernels torch.compile uses on the
// CPU): mkldnn::_convolution_pointwise (a unary post-op) and its .binary overload (an
// elementwise operation with a second tensor, then an optional unary post-op).
std::optional<c10::OperatorHandle> pointwiseConvolution(const char* overload) {
  return c10::Dispatcher::singleton().findSchema({"mkldnn::_convolution_pointwise", overload});
}

}  // namespace

at::Tensor convolveFolded(FoldedConv& conv, const at::Tensor& x, int64_t stride, int64_t padding,
                          bool relu, const at::Tensor& residual) {
  static const std::optional<c10::OperatorHandle> unary = pointwiseConvolution("");
  static const std::optional<c10::OperatorHandle> binary = pointwiseConvolution("binary");
  at::ScalarType dtype = x.scalar_type();
  if (x.is_cpu() && at::autocast::is_autocast_enabled(at::kCPU)) {
    dtype = at::autocast::get_autocast_dtype(at::kCPU);
  }
  const bool grad =
      at::GradMode::is_enabled() && (x.requires_grad() || conv.weight.requires_grad());
  // The weights in the activations' layout, once (not reordered by the library every call).
  const at::MemoryFormat layout = x.suggest_memory_format();
  if (!conv.weight.is_contiguous(layout)) {
    conv.weight = conv.weight.contiguous(layout);
    conv.weight_bf16 = at::Tensor();
  }
  const bool channels_last = x.is_contiguous(at::MemoryFormat::ChannelsLast) && x.size(1) > 1;
  // oneDNN fuses "add, then ReLU" in bfloat16 only for channels-last tensors.
  const bool fuse_relu = relu && (dtype == at::kFloat || !residual.defined() || channels_last);
  if (grad || !x.is_cpu() || !conv.weight.is_cpu() || !unary || !binary ||
      (dtype != at::kFloat && dtype != at::kBFloat16)) {
    at::Tensor y = at::conv2d(x, conv.weight, conv.bias, {stride, stride}, {padding, padding});
    if (residual.defined()) y = y + residual;
    return relu ? at::relu(y) : y;
  }
  const at::Tensor* weight = &conv.weight;
  const at::Tensor* bias = &conv.bias;
  if (dtype == at::kBFloat16) {
    if (!conv.weight_bf16.defined()) {
      conv.weight_bf16 = conv.weight.to(at::kBFloat16);  // keeps the layout
      conv.bias_bf16 = conv.bias.to(at::kBFloat16);
    }
    weight = &conv.weight_bf16;
    bias = &conv.bias_bf16;
  }
  const std::vector<int64_t> strides = {stride, stride}, paddings = {padding, padding};
  const std::vector<int64_t> dilation = {1, 1};
  torch::jit::Stack stack;
  stack.emplace_back(x.to(dtype));
  if (residual.defined()) stack.emplace_back(residual.to(dtype));
  stack.emplace_back(*weight);
  stack.emplace_back(*bias);
  stack.emplace_back(paddings);
  stack.emplace_back(strides);
  stack.emplace_back(dilation);
  stack.emplace_back(int64_t{1});  // groups
  if (residual.defined()) {
    stack.emplace_back(std::string("add"));
    stack.emplace_back(c10::IValue());  // alpha
    stack.emplace_back(fuse_relu ? c10::IValue(std::string("relu")) : c10::IValue());
  } else {
    stack.emplace_back(std::string(fuse_relu ? "relu" : "none"));
  }
  stack.emplace_back(c10::List<std::optional<c10::Scalar>>());  // the unary op's scalars
  stack.emplace_back(c10::IValue());                            // its algorithm
  (residual.defined() ? binary : unary)->callBoxed(stack);
  at::Tensor y = stack.back().toTensor();
  return relu && !fuse_relu ? y.relu_() : y;
}

void setFrozenBatchNormEps(torch::nn::Module& module, double eps) {
  for (const auto& m : module.modules(/*include_self=*/true)) {
    if (auto* bn = m->as<FrozenBatchNorm2dImpl>()) bn->eps = eps;
  }
}

}  // namespace mrcnn::model

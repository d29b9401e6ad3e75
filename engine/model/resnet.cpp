#include "engine/model/resnet.h"

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/model/frozen_batch_norm.h"

namespace mrcnn::model {

namespace {

// A bias-free convolution and the norm after it, registered under torchvision's names by
// their owner. When the norm is frozen it can be folded into the convolution.
struct ConvNorm {
  torch::nn::Conv2d conv{nullptr};
  torch::nn::AnyModule norm;
  int64_t stride = 1;
  int64_t padding = 0;
  FoldedConv folded;

  // The convolution and its norm, then + residual and ReLU if asked: fused into the
  // convolution when folded for inference.
  at::Tensor operator()(const at::Tensor& x, bool relu, const at::Tensor& residual = {}) {
    if (folded.weight.defined()) return convolveFolded(folded, x, stride, padding, relu, residual);
    at::Tensor y = normed(x);
    if (residual.defined()) y.add_(residual);
    return relu ? y.relu_() : y;
  }

  // Training keeps torchvision's arithmetic (a frozen norm after the convolution, not folded
  // into it): folding moves the features by float rounding, enough to reorder near-tied
  // proposals, and the losses would no longer equal torchvision's.
  at::Tensor normed(const at::Tensor& x) { return norm.forward(conv->forward(x)); }
  bool fold() {
    auto* bn = norm.ptr()->as<FrozenBatchNorm2dImpl>();
    if (bn == nullptr) return false;
    folded = foldIntoConv(conv->weight, conv->bias, *bn);
    return true;
  }
  void unfold() { folded = FoldedConv(); }
};

ConvNorm makeConvNorm(const ResNetOptions& o, int64_t in, int64_t out, int64_t kernel,
                      int64_t stride, int64_t padding) {
  ConvNorm cn;
  cn.conv = torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(false));
  if (o.frozen_bn) {
    cn.norm = torch::nn::AnyModule(FrozenBatchNorm2d(out, o.frozen_bn_eps));
  } else if (o.batch_norm_reducer) {
    cn.norm = torch::nn::AnyModule(SyncBatchNorm2d(out, o.batch_norm_reducer));
  } else {
    cn.norm = torch::nn::AnyModule(torch::nn::BatchNorm2d(out));
  }
  cn.stride = stride;
  cn.padding = padding;
  return cn;
}

struct StageLayout {
  bool bottleneck;
  std::array<int, 4> blocks;
};

StageLayout layoutOf(int depth) {
  switch (depth) {
    case 10:
      return {false, {1, 1, 1, 1}};  // TAO's ResNet-10
    case 18:
      return {false, {2, 2, 2, 2}};
    case 34:
      return {false, {3, 4, 6, 3}};
    case 50:
      return {true, {3, 4, 6, 3}};
    case 101:
      return {true, {3, 4, 23, 3}};
    default:
      throw std::invalid_argument("unsupported ResNet depth " + std::to_string(depth) +
                                  "; use 10, 18, 34, 50 or 101");
  }
}

}  // namespace

// A residual block: BasicBlock (two 3x3) or Bottleneck (1x1, 3x3 with the stride, 1x1 to
// 4x the width), with a 1x1 projection ("downsample") where the shape changes.
class ResidualBlock : public torch::nn::Module {
 public:
  // `name` is the block's own ("layer<s>.<b>"), to look its convolutions' widths up;
  // `projection` whether the standard block has one (a stride or a change of width).
  ResidualBlock(const ResNetOptions& o, const std::string& name, bool bottleneck, int64_t in,
                int64_t planes, int64_t stride, bool projection) {
    const auto width = [&](const std::string& conv, int64_t standard) {
      const auto it = o.widths.find(name + "." + conv);
      return it == o.widths.end() ? standard : it->second;
    };
    if (bottleneck) {
      const int64_t w1 = width("conv1", planes), w2 = width("conv2", planes);
      convs_.push_back(makeConvNorm(o, in, w1, /*kernel=*/1, /*stride=*/1, /*padding=*/0));
      convs_.push_back(makeConvNorm(o, w1, w2, 3, stride, 1));
      convs_.push_back(makeConvNorm(o, w2, width("conv3", planes * 4), 1, 1, 0));
    } else {
      const int64_t w1 = width("conv1", planes);
      convs_.push_back(makeConvNorm(o, in, w1, 3, stride, 1));
      convs_.push_back(makeConvNorm(o, w1, width("conv2", planes), 3, 1, 1));
    }
    out_ = convs_.back().conv->options.out_channels();
    for (size_t k = 0; k < convs_.size(); ++k) {
      register_module("conv" + std::to_string(k + 1), convs_[k].conv);
      register_module("bn" + std::to_string(k + 1), convs_[k].norm.ptr());
    }
    if (projection) {
      const int64_t d = width("downsample.0", out_);
      if (d != out_)
        mismatch(name + ".downsample.0", d, name + ".conv" + std::to_string(convs_.size()), out_);
      downsample_ = makeConvNorm(o, in, out_, 1, stride, 0);
      auto ds = register_module("downsample", std::make_shared<torch::nn::Module>());
      ds->register_module("0", downsample_->conv);
      ds->register_module("1", downsample_->norm.ptr());
    } else if (in != out_) {
      mismatch(name + ".conv" + std::to_string(convs_.size()), out_, "its input", in);
    }
  }

  int64_t outChannels() const { return out_; }

  at::Tensor forward(const at::Tensor& x) {
    // In place where autograd allows it (a convolution's backward does not need its output):
    // fewer allocations and passes over the activations.
    at::Tensor y = x;
    for (size_t k = 0; k + 1 < convs_.size(); ++k)
      y = convs_[k](y, /*relu=*/true);
    const at::Tensor identity = downsample_ ? (*downsample_)(x, /*relu=*/false) : x;
    return convs_.back()(y, /*relu=*/true, identity);
  }

  int fold() {
    int n = 0;
    for (ConvNorm& c : convs_)
      n += c.fold() ? 1 : 0;
    if (downsample_) n += downsample_->fold() ? 1 : 0;
    return n;
  }
  void unfold() {
    for (ConvNorm& c : convs_)
      c.unfold();
    if (downsample_) downsample_->unfold();
  }

 private:
  [[noreturn]] static void mismatch(const std::string& a, int64_t wa, const std::string& b,
                                    int64_t wb) {
    throw std::invalid_argument("ResNet widths: " + a + " has " + std::to_string(wa) +
                                " output channels but is added to " + b + " with " +
                                std::to_string(wb) + "; a residual sum needs the same channels");
  }

  std::vector<ConvNorm> convs_;
  std::optional<ConvNorm> downsample_;
  int64_t out_ = 0;
};

std::vector<int> freezeBlocksForTrainableLayers(int trainable_layers) {
  if (trainable_layers < 0 || trainable_layers > 5)
    throw std::invalid_argument("trainable layers must be in [0, 5], got " +
                                std::to_string(trainable_layers));
  std::vector<int> frozen;
  for (int b = 0; b <= 4 - trainable_layers; ++b)
    frozen.push_back(b);
  return frozen;
}

ResNetImpl::ResNetImpl(ResNetOptions options) : options_(std::move(options)) {
  const StageLayout layout = layoutOf(options_.depth);
  for (int b : options_.freeze_blocks) {
    if (b < 0 || b > 4)
      throw std::invalid_argument("freeze_blocks: block " + std::to_string(b) +
                                  " does not exist; use 0 (the stem) to 4 (layer4)");
  }
  for (const auto& [name, width] : options_.widths) {
    if (width < 1)
      throw std::invalid_argument("ResNet widths: " + name + " has " + std::to_string(width) +
                                  " output channels; a convolution keeps at least one");
  }
  const auto stem_width = options_.widths.find("conv1");
  const int64_t stem_out = stem_width == options_.widths.end() ? 64 : stem_width->second;
  ConvNorm stem = makeConvNorm(options_, 3, stem_out, /*kernel=*/7, /*stride=*/2, /*padding=*/3);
  conv1_ = register_module("conv1", stem.conv);
  bn1_ = stem.norm;
  register_module("bn1", bn1_.ptr());

  int64_t in = stem_out;
  int64_t standard_in = 64;
  for (int s = 0; s < 4; ++s) {
    const int64_t planes = int64_t{64} << s;
    const int64_t standard_out = layout.bottleneck ? planes * 4 : planes;
    const std::string layer_name = "layer" + std::to_string(s + 1);
    auto layer = register_module(layer_name, std::make_shared<torch::nn::Module>());
    for (int b = 0; b < layout.blocks[static_cast<size_t>(s)]; ++b) {
      const int64_t stride = b == 0 && s > 0 ? 2 : 1;
      // Which blocks have a projection follows the depth's layout (torchvision's rule on the
      // standard widths), whatever pruning did to the widths.
      const bool projection = stride != 1 || standard_in != standard_out;
      auto block =
          std::make_shared<ResidualBlock>(options_, layer_name + "." + std::to_string(b),
                                          layout.bottleneck, in, planes, stride, projection);
      layer->register_module(std::to_string(b), block);
      stages_[static_cast<size_t>(s)].push_back(block);
      in = block->outChannels();
      standard_in = standard_out;
    }
    stage_channels_[static_cast<size_t>(s)] = in;
  }

  // torchvision's initialisation: convolutions Kaiming normal (fan out, ReLU), norms 1 and 0.
  torch::NoGradGuard no_grad;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* conv = m->as<torch::nn::Conv2dImpl>()) {
      torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0, torch::kFanOut, torch::kReLU);
    }
  }
  applyFreezeBlocks();
}

void ResNetImpl::applyFreezeBlocks() {
  const auto frozen = [&](int b) {
    return std::find(options_.freeze_blocks.begin(), options_.freeze_blocks.end(), b) !=
           options_.freeze_blocks.end();
  };
  for (auto& p : conv1_->parameters())
    p.set_requires_grad(!frozen(0));
  for (auto& p : bn1_.ptr()->parameters())
    p.set_requires_grad(!frozen(0));
  for (size_t s = 0; s < 4; ++s) {
    for (auto& block : stages_[s]) {
      for (auto& p : block->parameters())
        p.set_requires_grad(!frozen(static_cast<int>(s) + 1));
    }
  }
}

std::vector<at::Tensor> ResNetImpl::forward(const at::Tensor& images) {
  TORCH_CHECK(images.dim() == 4 && images.size(1) == 3,
              "ResNet: expected images [N, 3, H, W], got ", images.sizes());
  at::Tensor x;
  if (stem_.weight.defined()) {
    x = convolveFolded(stem_, images, /*stride=*/2, /*padding=*/3, /*relu=*/true);
  } else {
    x = bn1_.forward(conv1_->forward(images)).relu_();
  }
  x = torch::max_pool2d(x, /*kernel_size=*/{3, 3}, /*stride=*/{2, 2}, /*padding=*/{1, 1});
  std::vector<at::Tensor> outputs;
  outputs.reserve(4);
  for (auto& stage : stages_) {
    for (auto& block : stage)
      x = block->forward(x);
    outputs.push_back(x);
  }
  return outputs;
}

int ResNetImpl::foldFrozenBatchNorm() {
  unfoldBatchNorm();
  int n = 0;
  if (auto* bn = bn1_.ptr()->as<FrozenBatchNorm2dImpl>()) {
    stem_ = foldIntoConv(conv1_->weight, conv1_->bias, *bn);
    ++n;
  }
  for (auto& stage : stages_) {
    for (auto& block : stage)
      n += block->fold();
  }
  folded_ = n > 0;
  return n;
}

void ResNetImpl::unfoldBatchNorm() {
  stem_ = FoldedConv();
  for (auto& stage : stages_) {
    for (auto& block : stage)
      block->unfold();
  }
  folded_ = false;
}

void ResNetImpl::train(bool on) {
  if (on) unfoldBatchNorm();
  torch::nn::Module::train(on);
}

}  // namespace mrcnn::model

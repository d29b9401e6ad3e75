#include "engine/model/mask_head.h"

#include <ATen/TensorIndexing.h>
#include <ATen/record_function.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/binary_cross_entropy_with_logits.h>
#include <ATen/ops/cat.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/options/conv.h>

#include "engine/ops/mask_targets.h"

namespace mrcnn::model {

namespace {

// torchvision's init of the mask branch's convolution weights: He normal, fan out, ReLU gain.
void heNormalFanOut(at::Tensor& weight) {
  torch::nn::init::kaiming_normal_(weight, /*a=*/0.0, torch::kFanOut, torch::kReLU);
}

}  // namespace

MaskRCNNHeadsImpl::MaskRCNNHeadsImpl(const MaskHeadOptions& options) {
  TORCH_CHECK(options.in_channels > 0 && options.dilation > 0 && !options.layers.empty(),
              "MaskRCNNHeads: in_channels and dilation must be positive and layers non-empty (got ",
              options.in_channels, ", ", options.dilation, ", ", options.layers.size(), " layers)");
  int64_t in = options.in_channels;
  torch::NoGradGuard no_grad;
  // Block <i> is torchvision's Conv2dNormActivation without norm (a Sequential of the conv
  // and a ReLU), hence the names "<i>.0.weight".
  for (size_t i = 0; i < options.layers.size(); ++i) {
    const int64_t out = options.layers[i];
    TORCH_CHECK(out > 0, "MaskRCNNHeads: layer ", i, " has ", out, " channels");
    torch::nn::Conv2d conv(torch::nn::Conv2dOptions(in, out, /*kernel_size=*/3)
                               .padding(options.dilation)
                               .dilation(options.dilation));
    heNormalFanOut(conv->weight);
    torch::nn::init::zeros_(conv->bias);
    blocks_.push_back(register_module(
        std::to_string(i),
        torch::nn::Sequential(conv, torch::nn::ReLU(torch::nn::ReLUOptions(/*inplace=*/true)))));
    in = out;
  }
  in_channels_ = options.in_channels;
}

at::Tensor MaskRCNNHeadsImpl::forward(const at::Tensor& x) {
  TORCH_CHECK(x.dim() == 4 && x.size(1) == in_channels_, "MaskRCNNHeads: expected features [R, ",
              in_channels_, ", H, W], got ", x.sizes());
  at::Tensor t = x;
  for (torch::nn::Sequential& block : blocks_)
    t = block->forward(t);
  return t;
}

std::vector<std::pair<std::string, std::string>> MaskRCNNHeadsImpl::legacyParameterNames() const {
  std::vector<std::pair<std::string, std::string>> names;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    for (const char* type : {"weight", "bias"}) {
      names.emplace_back("mask_fcn" + std::to_string(i + 1) + "." + type,
                         std::to_string(i) + ".0." + type);
    }
  }
  return names;
}

MaskRCNNPredictorImpl::MaskRCNNPredictorImpl(int64_t in_channels, int64_t dim_reduced,
                                             int64_t num_classes) {
  TORCH_CHECK(in_channels > 0 && dim_reduced > 0 && num_classes > 0,
              "MaskRCNNPredictor: in_channels, dim_reduced and num_classes must be positive (got ",
              in_channels, ", ", dim_reduced, ", ", num_classes, ")");
  conv5_mask_ = register_module(
      "conv5_mask", torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(
                                                   in_channels, dim_reduced, /*kernel_size=*/2)
                                                   .stride(2)));
  relu_ = register_module("relu", torch::nn::ReLU(torch::nn::ReLUOptions(/*inplace=*/true)));
  mask_fcn_logits_ = register_module(
      "mask_fcn_logits",
      torch::nn::Conv2d(torch::nn::Conv2dOptions(dim_reduced, num_classes, /*kernel_size=*/1)));
  // torchvision re-initialises the weights only; the biases keep PyTorch's default init.
  torch::NoGradGuard no_grad;
  heNormalFanOut(conv5_mask_->weight);
  heNormalFanOut(mask_fcn_logits_->weight);
  in_channels_ = in_channels;
}

at::Tensor MaskRCNNPredictorImpl::forward(const at::Tensor& x) {
  TORCH_CHECK(x.dim() == 4 && x.size(1) == in_channels_,
              "MaskRCNNPredictor: expected features [R, ", in_channels_, ", H, W], got ",
              x.sizes());
  return mask_fcn_logits_->forward(relu_->forward(conv5_mask_->forward(x)));
}

namespace {

int64_t maskCount(const at::Tensor& masks) {
  return masks.size(0);
}
int64_t maskCount(const CroppedMasks& masks) {
  return masks.size();
}

// The loss from each image's targets: `targets_of(i, m)` the M x M targets of image i's
// positive proposals; one entry per image in every vector (their sizes checked here).
template <typename GtMasks, typename TargetsOf>
at::Tensor lossFromTargets(const at::Tensor& mask_logits, const std::vector<at::Tensor>& proposals,
                           const std::vector<GtMasks>& gt_masks,
                           const std::vector<at::Tensor>& gt_labels,
                           const std::vector<at::Tensor>& matched_idxs, TargetsOf targets_of) {
  RECORD_USER_SCOPE("mrcnn/roi_heads/mask_loss");
  TORCH_CHECK(mask_logits.dim() == 4 && mask_logits.size(2) == mask_logits.size(3),
              "maskRCNNLoss: mask_logits must be [R, C, M, M], got ", mask_logits.sizes());
  TORCH_CHECK(proposals.size() == gt_masks.size() && proposals.size() == gt_labels.size() &&
                  proposals.size() == matched_idxs.size(),
              "maskRCNNLoss: one entry per image in proposals, gt_masks, gt_labels and "
              "matched_idxs, got ",
              proposals.size(), ", ", gt_masks.size(), ", ", gt_labels.size(), " and ",
              matched_idxs.size());
  const int64_t m = mask_logits.size(-1);
  std::vector<at::Tensor> labels, targets;
  int64_t rois = 0;
  for (size_t i = 0; i < proposals.size(); ++i) {
    TORCH_CHECK(gt_labels[i].dim() == 1 && gt_labels[i].size(0) == maskCount(gt_masks[i]),
                "maskRCNNLoss: image ", i, " has ", maskCount(gt_masks[i]),
                " ground-truth masks but gt_labels ", gt_labels[i].sizes());
    targets.push_back(targets_of(i, m));
    labels.push_back(gt_labels[i].index({matched_idxs[i]}));
    rois += proposals[i].size(0);
  }
  TORCH_CHECK(rois == mask_logits.size(0), "maskRCNNLoss: ", mask_logits.size(0),
              " mask logit maps for ", rois, " positive proposals");
  if (rois == 0) return mask_logits.sum() * 0;
  const at::Tensor label = at::cat(labels);
  const at::Tensor target = at::cat(targets);
  const at::Tensor rows = at::arange(rois, label.options());
  // Each RoI's map of its ground-truth class, averaged over every pixel of every RoI.
  return at::binary_cross_entropy_with_logits(mask_logits.index({rows, label}),
                                              target.to(mask_logits.scalar_type()));
}

}  // namespace

// Targets: the matched mask under each RoI (ops/mask_targets.h); no gradient flows to the
// proposals, as in torchvision (they are detached there).
at::Tensor maskRCNNLoss(const at::Tensor& mask_logits, const std::vector<at::Tensor>& proposals,
                        const std::vector<at::Tensor>& gt_masks,
                        const std::vector<at::Tensor>& gt_labels,
                        const std::vector<at::Tensor>& matched_idxs) {
  return lossFromTargets(
      mask_logits, proposals, gt_masks, gt_labels, matched_idxs, [&](size_t i, int64_t m) {
        return ops::mask_targets(gt_masks[i], proposals[i].detach(), matched_idxs[i], m);
      });
}

at::Tensor maskRCNNLoss(const at::Tensor& mask_logits, const std::vector<at::Tensor>& proposals,
                        const std::vector<CroppedMasks>& gt_masks,
                        const std::vector<at::Tensor>& gt_labels,
                        const std::vector<at::Tensor>& matched_idxs) {
  return lossFromTargets(
      mask_logits, proposals, gt_masks, gt_labels, matched_idxs, [&](size_t i, int64_t m) {
        const CroppedMasks& c = gt_masks[i];
        return ops::mask_targets_cropped(c.data, c.windows, c.offsets, c.height, c.width,
                                         proposals[i].detach(), matched_idxs[i], m);
      });
}

std::vector<at::Tensor> maskRCNNInference(const at::Tensor& mask_logits,
                                          const std::vector<at::Tensor>& labels) {
  TORCH_CHECK(mask_logits.dim() == 4, "maskRCNNInference: mask_logits must be [K, C, M, M], got ",
              mask_logits.sizes());
  std::vector<int64_t> counts;
  counts.reserve(labels.size());
  int64_t total = 0;
  for (const at::Tensor& l : labels) {
    TORCH_CHECK(l.dim() == 1, "maskRCNNInference: labels must be 1-D per image, got ", l.sizes());
    counts.push_back(l.size(0));
    total += l.size(0);
  }
  TORCH_CHECK(total == mask_logits.size(0), "maskRCNNInference: ", mask_logits.size(0),
              " mask logit maps for ", total, " detections");
  if (labels.empty()) return {};
  const at::Tensor label = at::cat(labels).to(mask_logits.device());
  const at::Tensor rows = at::arange(total, label.options());
  // The sigmoid of the selected maps only: elementwise, so equal to torchvision's sigmoid of
  // every class's map followed by the selection.
  const at::Tensor probs = mask_logits.index({rows, label}).sigmoid().unsqueeze(1);
  return probs.split_with_sizes(counts, /*dim=*/0);
}

}  // namespace mrcnn::model

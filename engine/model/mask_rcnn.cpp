#include "engine/model/mask_rcnn.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <c10/core/InferenceMode.h>
#include <torch/nn/module.h>

#include <cstddef>
#include <utility>

#include "engine/model/device_copy.h"

namespace mrcnn::model {

namespace {

// denseStages' one list as its three: the FPN's levels, the head's logits, its deltas.
std::vector<std::vector<at::Tensor>> splitDense(const std::vector<at::Tensor>& dense) {
  TORCH_CHECK(dense.size() % 3 == 0 && !dense.empty(), "MaskRCNN: the dense stages gave ",
              dense.size(), " tensors, not three lists of levels");
  const auto n = static_cast<std::ptrdiff_t>(dense.size() / 3);
  std::vector<std::vector<at::Tensor>> lists;
  for (std::ptrdiff_t i = 0; i < 3; ++i)
    lists.emplace_back(dense.begin() + i * n, dense.begin() + (i + 1) * n);
  return lists;
}

}  // namespace

MaskRCNNOptions MaskRCNNOptions::torchvisionResNet50FPN(int64_t num_classes) {
  MaskRCNNOptions o;
  o.backbone.resnet.depth = 50;
  o.backbone.resnet.frozen_bn = true;
  o.backbone.resnet.freeze_blocks = freezeBlocksForTrainableLayers(3);
  o.backbone.min_level = 2;
  o.backbone.max_level = 6;
  o.anchors = AnchorOptions::torchvision();
  o.roi_heads.num_classes = num_classes;
  o.roi_heads.in_channels = o.backbone.out_channels;
  o.roi_heads.min_level = 2;
  o.roi_heads.max_level = 6;
  return o;
}

void moveToDevice(MaskRCNNTargets& targets, const c10::Device& device) {
  for (auto* list : {&targets.boxes, &targets.labels, &targets.masks})
    for (at::Tensor& t : *list)
      t = copyToDevice(t, device);
  for (CroppedMasks& m : targets.mask_crops)
    m = toDevice(m, device);
}

MaskRCNNImpl::MaskRCNNImpl(MaskRCNNOptions options, std::optional<at::Generator> generator)
    : options_(std::move(options)) {
  TORCH_CHECK(options_.roi_heads.min_level == options_.backbone.min_level &&
                  options_.roi_heads.max_level == options_.backbone.max_level,
              "MaskRCNN: the RoI heads' levels (", options_.roi_heads.min_level, "..",
              options_.roi_heads.max_level, ") differ from the backbone's (",
              options_.backbone.min_level, "..", options_.backbone.max_level, ")");
  applyConvWidths();
  backbone_ = register_module("backbone", BackboneWithFPN(options_.backbone));

  AnchorGenerator anchors(options_.anchors);
  TORCH_CHECK(anchors.numLevels() == options_.backbone.max_level - options_.backbone.min_level + 1,
              "MaskRCNN: ", anchors.numLevels(), " anchor levels for ",
              options_.backbone.max_level - options_.backbone.min_level + 1, " feature levels");
  const std::vector<int64_t> per_location = anchors.numAnchorsPerLocation();
  RPNHeadOptions head;
  head.in_channels = options_.backbone.out_channels;
  head.num_anchors = per_location.front();
  head.conv_depth = options_.rpn_head_conv_depth;
  head.conv_channels = rpn_head_widths_;
  rpn_ = register_module(
      "rpn", RegionProposalNetwork(std::move(anchors), RPNHead(head), options_.rpn, generator));
  roi_heads_ = register_module("roi_heads", RoIHeads(options_.roi_heads, generator));
}

void MaskRCNNImpl::applyConvWidths() {
  const std::string body = "backbone.body.", rpn = "rpn.head.conv.", mask = "roi_heads.mask_head.";
  const auto width = [&](const std::string& name, int64_t standard) {
    const auto it = options_.conv_widths.find(name);
    return it == options_.conv_widths.end() ? standard : it->second;
  };
  for (const auto& [name, w] : options_.conv_widths) {
    TORCH_CHECK(isPrunableConv(name), "MaskRCNN: conv_widths names ", name,
                ", which is not a prunable convolution");
    TORCH_CHECK(w > 0, "MaskRCNN: conv_widths gives ", name, " ", w, " output channels");
    if (name.starts_with(body)) options_.backbone.resnet.widths[name.substr(body.size())] = w;
  }
  rpn_head_widths_.clear();
  for (int64_t i = 0; i < options_.rpn_head_conv_depth; ++i)
    rpn_head_widths_.push_back(
        width(rpn + std::to_string(i) + ".0", options_.backbone.out_channels));
  const std::vector<int64_t>& layers = options_.roi_heads.mask_head_layers;
  options_.roi_heads.mask_head_widths.clear();
  for (size_t i = 0; i < layers.size(); ++i)
    options_.roi_heads.mask_head_widths.push_back(
        width(mask + std::to_string(i) + ".0", layers[i]));
  // A width for a convolution this model does not have (an index past the heads' depth,
  // a block past the depth's layout) is the weights' business: loading reports the keys.
}

RPNTargets MaskRCNNImpl::rpnTargets(const MaskRCNNTargets& targets) const {
  RPNTargets t;
  t.boxes = targets.boxes;
  t.sampled = targets.rpn_sampled;
  t.sample_keys = targets.sample_keys;
  return t;
}

RoIHeadsTargets MaskRCNNImpl::roiTargets(const MaskRCNNTargets& targets) const {
  RoIHeadsTargets t;
  t.boxes = targets.boxes;
  t.labels = targets.labels;
  t.masks = targets.masks;
  t.mask_crops = targets.mask_crops;
  t.sampled = targets.roi_sampled;
  t.sample_keys = targets.sample_keys;
  // The RoI sampler's draws are a stream of their own, not the RPN's again.
  for (uint64_t& key : t.sample_keys)
    key ^= 0x726F695F73616D70ull;
  return t;
}

MaskRCNNLosses MaskRCNNImpl::combine(const RPNLosses& rpn, const RoIHeadsLosses& heads) const {
  MaskRCNNLosses out;
  out.rpn_objectness = rpn.objectness;
  out.rpn_box = rpn.box;
  out.classifier = heads.classifier;
  out.box_reg = heads.box_reg;
  out.mask = heads.mask;
  out.rpn_sampled = rpn.sampled;
  out.roi_sampled = heads.sampled;
  out.mask_positives = heads.mask_positives;
  out.total = out.rpn_objectness + rpn.box_weighted + out.classifier +
              out.box_reg * options_.roi_heads.box_loss_weight;
  if (out.mask.defined()) out.total = out.total + out.mask * options_.roi_heads.mask_loss_weight;
  return out;
}

MaskRCNNLosses MaskRCNNImpl::losses(const at::Tensor& images, const ImageSizes& sizes,
                                    const MaskRCNNTargets& targets, MaskRCNNTrace* trace) {
  TORCH_CHECK(is_training(), "MaskRCNN::losses: the model is in evaluation mode");
  const size_t n = static_cast<size_t>(images.size(0));
  TORCH_CHECK(targets.boxes.size() == n && targets.labels.size() == n,
              "MaskRCNN::losses: ground truth for ", targets.boxes.size(), " images, batch of ", n);

  const at::Tensor x = inLayout(images);
  std::vector<std::vector<at::Tensor>> lists;
  {
    RECORD_USER_SCOPE("mrcnn/dense");
    lists = splitDense(dense_runner_ ? dense_runner_(x) : denseStages(x));
  }
  std::vector<at::Tensor> features = lists[0];
  const RPNHeadMaps head_maps{lists[1], lists[2]};
  const RPNTargets rpn_targets = rpnTargets(targets);
  RPNOutput proposals = rpn_->forward(features, sizes, &rpn_targets, &head_maps);
  const RoIHeadsTargets roi_targets = roiTargets(targets);
  RoIHeadsOutput heads = roi_heads_->forward(features, proposals.boxes, sizes, &roi_targets);

  TORCH_CHECK(proposals.losses && heads.losses, "MaskRCNN::losses: a stage returned no losses");
  MaskRCNNLosses out = combine(*proposals.losses, *heads.losses);
  if (trace) {
    trace->features = std::move(features);
    trace->proposals = std::move(proposals.boxes);
  }
  return out;
}

std::vector<at::Tensor> MaskRCNNImpl::denseStages(const at::Tensor& images) {
  std::vector<at::Tensor> out = backbone_->forward(images);
  auto [logits, deltas] = rpn_->head()->forward(out);
  out.insert(out.end(), logits.begin(), logits.end());
  out.insert(out.end(), deltas.begin(), deltas.end());
  return out;
}

std::vector<Detections> MaskRCNNImpl::detect(const at::Tensor& images, const ImageSizes& sizes,
                                             MaskRCNNTrace* trace) {
  TORCH_CHECK(!is_training(), "MaskRCNN::detect: the model is in training mode (call eval())");
  const at::Tensor x = inLayout(images);  // weights moved outside inference mode
  c10::InferenceMode inference_mode;      // no autograd bookkeeping at all
  std::vector<std::vector<at::Tensor>> lists;
  {
    RECORD_USER_SCOPE("mrcnn/dense");
    lists = splitDense(dense_runner_ ? dense_runner_(x) : denseStages(x));
  }
  std::vector<at::Tensor> features = lists[0];
  const RPNHeadMaps head_maps{lists[1], lists[2]};
  RPNOutput proposals = rpn_->forward(features, sizes, nullptr, &head_maps);
  RoIHeadsOutput heads = roi_heads_->forward(features, proposals.boxes, sizes);
  if (trace) {
    trace->features = std::move(features);
    trace->proposals = std::move(proposals.boxes);
  }
  return std::move(heads.detections);
}

MaskRCNNValidation MaskRCNNImpl::validate(const at::Tensor& images, const ImageSizes& sizes,
                                          const MaskRCNNTargets& targets) {
  TORCH_CHECK(!is_training(), "MaskRCNN::validate: the model is in training mode (call eval())");
  const size_t n = static_cast<size_t>(images.size(0));
  TORCH_CHECK(targets.boxes.size() == n && targets.labels.size() == n,
              "MaskRCNN::validate: ground truth for ", targets.boxes.size(), " images, batch of ",
              n);
  const at::Tensor x = inLayout(images);
  c10::InferenceMode inference_mode;
  const std::vector<at::Tensor> features = backbone_->forward(x);
  const RPNOutput proposals = rpn_->validate(features, sizes, rpnTargets(targets));
  RoIHeadsOutput heads = roi_heads_->validate(features, proposals.training_boxes, proposals.boxes,
                                              sizes, roiTargets(targets));
  MaskRCNNValidation out;
  out.losses = combine(*proposals.losses, *heads.losses);
  out.detections = std::move(heads.detections);
  return out;
}

std::vector<std::pair<std::string, std::string>> MaskRCNNImpl::legacyParameterNames() const {
  std::vector<std::pair<std::string, std::string>> names;
  const auto add = [&](const std::string& prefix,
                       const std::vector<std::pair<std::string, std::string>>& relative) {
    for (const auto& [old_name, new_name] : relative) {
      names.emplace_back(prefix + old_name, prefix + new_name);
    }
  };
  add("backbone.", backbone_->legacyParameterNames());
  add("rpn.head.", RPNHeadImpl::legacyParameterNames());
  add("roi_heads.", roi_heads_->legacyParameterNames());
  return names;
}

LoadReport MaskRCNNImpl::loadTorchvisionState(const StateDict& state, LoadOptions options) {
  const auto legacy = legacyParameterNames();
  options.legacy_names.insert(options.legacy_names.end(), legacy.begin(), legacy.end());
  backbone_->body()->unfoldBatchNorm();
  dense_runner_ = {};
  return loadStateDict(*this, state, options);
}

StateDict MaskRCNNImpl::torchvisionState() const {
  return stateDictOf(*this);
}

void MaskRCNNImpl::prepareForInference() {
  dense_runner_ = {};
  eval();
  setConvWeightLayout(*this, channelsLastFor(options_.layout) ? at::MemoryFormat::ChannelsLast
                                                              : at::MemoryFormat::Contiguous);
  if (options_.backbone.resnet.frozen_bn) backbone_->body()->foldFrozenBatchNorm();
}

at::Tensor MaskRCNNImpl::inLayout(const at::Tensor& images) {
  const at::MemoryFormat format = channelsLastFor(options_.layout) ? at::MemoryFormat::ChannelsLast
                                                                   : at::MemoryFormat::Contiguous;
  setConvWeightLayout(*this, format);
  return images.contiguous(format);
}

}  // namespace mrcnn::model

#include "engine/model/rpn.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>

#include "engine/ops/box_coder.h"
#include "engine/ops/box_iou.h"
#include "engine/ops/nms.h"

namespace mrcnn::model {
namespace {

// [N, A*C, H, W] -> [N, H*W*A, C]: the anchors' order (cell major, anchor minor).
at::Tensor permuteAndFlatten(const at::Tensor& layer, int64_t c) {
  const int64_t n = layer.size(0), h = layer.size(2), w = layer.size(3);
  return layer.view({n, -1, c, h, w}).permute({0, 3, 4, 1, 2}).reshape({n, -1, c});
}

at::Tensor clipToImage(const at::Tensor& boxes, const std::array<int64_t, 2>& size) {
  const double h = static_cast<double>(size[0]), w = static_cast<double>(size[1]);
  const at::Tensor x = boxes.slice(1, 0, 4, 2).clamp(0.0, w);
  const at::Tensor y = boxes.slice(1, 1, 4, 2).clamp(0.0, h);
  return at::stack({x, y}, /*dim=*/2).reshape(boxes.sizes());
}

}  // namespace

RPNOptions toRPNOptions(const RPNSpecFields& s) {
  RPNOptions o;
  o.pre_nms_top_n_train = s.train_rpn_pre_nms_topn;
  o.post_nms_top_n_train = s.train_rpn_post_nms_topn;
  o.nms_thresh_train = s.train_rpn_nms_threshold;
  o.pre_nms_top_n_test = s.test_rpn_pre_nms_topn;
  o.post_nms_top_n_test = s.test_rpn_post_nms_topn;
  o.nms_thresh_test = s.test_rpn_nms_thresh;
  o.fg_iou_thresh = s.rpn_positive_overlap;
  o.bg_iou_thresh = s.rpn_negative_overlap;
  o.batch_size_per_image = s.rpn_batch_size_per_im;
  o.positive_fraction = s.rpn_fg_fraction;
  o.min_size = std::max<double>(s.rpn_min_size, 1e-3);
  o.box_loss_weight = s.rpn_box_loss_weight;
  return o;
}

RegionProposalNetworkImpl::RegionProposalNetworkImpl(AnchorGenerator anchor_generator, RPNHead head,
                                                     RPNOptions options,
                                                     std::optional<at::Generator> generator)
    : anchor_generator_(std::move(anchor_generator)),
      head_(std::move(head)),
      options_(options),
      matcher_(MatcherOptions{options.fg_iou_thresh, options.bg_iou_thresh,
                              /*allow_low_quality_matches=*/true}),
      sampler_(SamplerOptions{options.batch_size_per_image, options.positive_fraction},
               std::move(generator)) {
  const std::vector<int64_t> per_location = anchor_generator_.numAnchorsPerLocation();
  for (int64_t a : per_location) {
    TORCH_CHECK(a == head_->options().num_anchors, "RegionProposalNetwork: the head predicts ",
                head_->options().num_anchors, " anchors per location, the anchor generator makes ",
                a);
  }
  register_module("head", head_);
}

std::pair<at::Tensor, at::Tensor> RegionProposalNetworkImpl::assignTargets(
    const at::Tensor& anchors, const at::Tensor& gt_boxes) const {
  if (gt_boxes.numel() == 0) {  // a background image: every anchor negative
    return {at::zeros({anchors.size(0)}, anchors.options().dtype(at::kFloat)),
            at::zeros(anchors.sizes(), anchors.options().dtype(at::kFloat))};
  }
  // In blocks of anchors: an image with many objects would need an anchors x objects matrix.
  const at::Tensor matched = matcher_.matchBoxes(gt_boxes, anchors);
  const at::Tensor matched_gt = gt_boxes.index_select(0, matched.clamp_min(0));
  at::Tensor labels = (matched >= 0).to(at::kFloat);
  labels.masked_fill_(matched == Matcher::kBelowLowThreshold, 0.0);
  labels.masked_fill_(matched == Matcher::kBetweenThresholds, -1.0);
  return {labels, matched_gt};
}

RegionProposalNetworkImpl::HeadOutput RegionProposalNetworkImpl::runHead(
    const std::vector<at::Tensor>& features, const ImageSizes& sizes) {
  TORCH_CHECK(!features.empty(), "RegionProposalNetwork: no feature maps");
  HeadOutput h;
  h.num_images = features[0].size(0);
  TORCH_CHECK(static_cast<int64_t>(sizes.images.size()) == h.num_images,
              "RegionProposalNetwork: ", sizes.images.size(), " image sizes for a batch of ",
              h.num_images);

  auto [logits, deltas] = head_->forward(features);
  h.anchors = anchor_generator_(features, sizes.padded);  // [T, 4]

  std::vector<at::Tensor> flat_logits, flat_deltas;
  for (size_t l = 0; l < logits.size(); ++l) {
    h.per_level.push_back(logits[l].size(1) * logits[l].size(2) * logits[l].size(3));
    flat_logits.push_back(permuteAndFlatten(logits[l], 1));
    flat_deltas.push_back(permuteAndFlatten(deltas[l], 4));
  }
  h.objectness = at::cat(flat_logits, 1).flatten(0, -2);     // [N*T, 1]
  h.pred_deltas = at::cat(flat_deltas, 1).reshape({-1, 4});  // [N*T, 4]

  // Proposals do not carry gradients back into the deltas (as torchvision). Decoded in float
  // also under autocast (torchvision decodes in the deltas' bfloat16, which puts a box edge
  // at 1000 px only to the nearest 4 px).
  const at::Tensor all_anchors = h.anchors.repeat({h.num_images, 1});
  h.decoded =
      ops::decode_boxes(h.pred_deltas.detach().to(at::kFloat), all_anchors, ops::BoxCoderWeights{})
          .view({h.num_images, h.anchors.size(0), 4});
  return h;
}

void RegionProposalNetworkImpl::selectProposals(const HeadOutput& h, const ImageSizes& sizes,
                                                bool training_counts,
                                                std::vector<at::Tensor>& boxes_out,
                                                std::vector<at::Tensor>* scores_out) const {
  // The best anchors of each level, then per image clip, filter, NMS.
  const int64_t total = h.anchors.size(0);
  const at::Tensor obj = h.objectness.detach().to(at::kFloat).reshape({h.num_images, total});
  const int64_t pre_n =
      training_counts ? options_.pre_nms_top_n_train : options_.pre_nms_top_n_test;
  const int64_t post_n =
      training_counts ? options_.post_nms_top_n_train : options_.post_nms_top_n_test;
  const double nms_thresh = training_counts ? options_.nms_thresh_train : options_.nms_thresh_test;

  std::vector<at::Tensor> top_idx, top_lvl;
  int64_t offset = 0;
  for (size_t l = 0; l < h.per_level.size(); ++l) {
    const at::Tensor level_obj = obj.narrow(1, offset, h.per_level[l]);
    const int64_t k = std::min(pre_n, h.per_level[l]);
    top_idx.push_back(std::get<1>(level_obj.topk(k, /*dim=*/1)) + offset);
    top_lvl.push_back(
        at::full({h.num_images, k}, static_cast<int64_t>(l), obj.options().dtype(at::kLong)));
    offset += h.per_level[l];
  }
  const at::Tensor idx = at::cat(top_idx, 1);
  const at::Tensor lvl = at::cat(top_lvl, 1);
  const at::Tensor logit = obj.gather(1, idx);
  const at::Tensor prob = at::sigmoid(logit);
  // NMS by probability, near-certain ones by logit (ops::kNmsCertainLogit): the same
  // proposals in every runtime.
  const at::Tensor nms_key = at::where(logit >= ops::kNmsCertainLogit, logit, prob);
  const at::Tensor boxes = h.decoded.gather(1, idx.unsqueeze(2).expand({-1, -1, 4}));

  for (int64_t i = 0; i < h.num_images; ++i) {
    at::Tensor b = clipToImage(boxes[i], sizes.images[static_cast<size_t>(i)]);
    at::Tensor s = prob[i];
    at::Tensor key = nms_key[i];
    at::Tensor v = lvl[i];
    const at::Tensor w = b.select(1, 2) - b.select(1, 0);
    const at::Tensor ht = b.select(1, 3) - b.select(1, 1);
    const at::Tensor keep_big = at::where((w >= options_.min_size) & (ht >= options_.min_size) &
                                          (s >= options_.score_thresh))[0];
    b = b.index_select(0, keep_big);
    s = s.index_select(0, keep_big);
    key = key.index_select(0, keep_big);
    v = v.index_select(0, keep_big);
    at::Tensor keep = ops::batched_nms(b, key, v, nms_thresh);
    keep = keep.narrow(0, 0, std::min(post_n, keep.size(0)));
    boxes_out.push_back(b.index_select(0, keep));
    if (scores_out) scores_out->push_back(s.index_select(0, keep));
  }
}

RPNLosses RegionProposalNetworkImpl::computeLosses(const HeadOutput& h, const RPNTargets& targets) {
  TORCH_CHECK(static_cast<int64_t>(targets.boxes.size()) == h.num_images,
              "RegionProposalNetwork: ground truth for ", targets.boxes.size(),
              " images in a batch of ", h.num_images);
  const int64_t total = h.anchors.size(0);
  std::vector<at::Tensor> labels, regression_targets;
  for (int64_t i = 0; i < h.num_images; ++i) {
    const at::Tensor gt = targets.boxes[static_cast<size_t>(i)];
    TORCH_CHECK(gt.numel() == 0 || (gt.dim() == 2 && gt.size(1) == 4),
                "RegionProposalNetwork: ground-truth boxes must be [M, 4], got ", gt.sizes());
    auto [l, matched_gt] = assignTargets(h.anchors, gt.to(h.anchors.options()));
    regression_targets.push_back(ops::encode_boxes(matched_gt, h.anchors, ops::BoxCoderWeights{}));
    labels.push_back(std::move(l));
  }

  std::vector<SampledMasks> sampled = targets.sampled;
  if (sampled.empty()) {
    sampled = sampler_(labels, targets.sample_keys);
  } else {
    TORCH_CHECK(static_cast<int64_t>(sampled.size()) == h.num_images,
                "RegionProposalNetwork: given samples for ", sampled.size(),
                " images in a batch of ", h.num_images);
  }
  std::vector<at::Tensor> pos_masks, neg_masks;
  for (const SampledMasks& m : sampled) {
    TORCH_CHECK(m.positive.numel() == total && m.negative.numel() == total,
                "RegionProposalNetwork: a sample mask must cover the image's ", total, " anchors");
    pos_masks.push_back(m.positive.to(h.anchors.device()));
    neg_masks.push_back(m.negative.to(h.anchors.device()));
  }
  const at::Tensor pos = at::where(at::cat(pos_masks, 0))[0];
  const at::Tensor neg = at::where(at::cat(neg_masks, 0))[0];
  const at::Tensor sampled_idx = at::cat({pos, neg}, 0);
  const at::Tensor all_labels = at::cat(labels, 0);
  const at::Tensor all_targets = at::cat(regression_targets, 0);

  RPNLosses losses;
  losses.box =
      at::smooth_l1_loss(h.pred_deltas.index_select(0, pos), all_targets.index_select(0, pos),
                         at::Reduction::Sum, options_.smooth_l1_beta) /
      static_cast<double>(sampled_idx.numel());
  losses.objectness = at::binary_cross_entropy_with_logits(
      h.objectness.flatten().index_select(0, sampled_idx), all_labels.index_select(0, sampled_idx));
  losses.box_weighted = losses.box * options_.box_loss_weight;
  losses.sampled = static_cast<double>(sampled_idx.numel());
  return losses;
}

RPNOutput RegionProposalNetworkImpl::forward(const std::vector<at::Tensor>& features,
                                             const ImageSizes& sizes, const RPNTargets* targets) {
  const bool training = is_training();
  TORCH_CHECK(!training || targets != nullptr,
              "RegionProposalNetwork: targets are required in training");
  const HeadOutput h = runHead(features, sizes);
  RPNOutput out;
  selectProposals(h, sizes, training, out.boxes, &out.scores);
  if (training) out.losses = computeLosses(h, *targets);
  return out;
}

RPNOutput RegionProposalNetworkImpl::validate(const std::vector<at::Tensor>& features,
                                              const ImageSizes& sizes, const RPNTargets& targets) {
  const HeadOutput h = runHead(features, sizes);
  RPNOutput out;
  selectProposals(h, sizes, /*training_counts=*/false, out.boxes, &out.scores);
  selectProposals(h, sizes, /*training_counts=*/true, out.training_boxes, nullptr);
  out.losses = computeLosses(h, targets);
  return out;
}

}  // namespace mrcnn::model

#include "engine/model/rpn.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/model/counted_indices.h"
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

// How batched_nms runs the NMS of an image's valid boxes: one NMS over the boxes shifted
// apart per level, or (per_level) one NMS per level, which it does above 4000 coordinates on
// the CPU and 100000 on CUDA. On a GPU the valid boxes are not counted (that would make the
// host wait): all K candidates count, which differs from batched_nms's choice only for more
// than 25000 candidates an image.
bool perLevelNms(const at::Tensor& valid) {
  if (valid.is_cpu()) return valid.sum().item<int64_t>() * 4 > 4000;
  return valid.numel() * 4 > 100000;
}

// The boxes and categories each image's NMS runs on: shifted apart by batched_nms's offsets
// (level x (largest coordinate of the valid boxes + 1)) in one category, or as they are with
// their level as the category.
struct NmsInputs {
  at::Tensor boxes, categories;  // [N, K, 4], [N, K]
  std::vector<bool> per_level;
};

NmsInputs nmsInputs(const at::Tensor& boxes, const at::Tensor& levels, const at::Tensor& valid) {
  NmsInputs in;
  std::vector<at::Tensor> b, c;
  for (int64_t i = 0; i < boxes.size(0); ++i) {
    in.per_level.push_back(perLevelNms(valid[i]));
    if (in.per_level.back()) {
      b.push_back(boxes[i]);
      c.push_back(levels[i]);
      continue;
    }
    const at::Tensor largest =
        at::where(valid[i].unsqueeze(1), boxes[i], -std::numeric_limits<float>::infinity()).max();
    const at::Tensor offsets = levels[i].to(boxes.options()) * (largest + 1);
    b.push_back(boxes[i] + offsets.unsqueeze(1));
    c.push_back(at::zeros_like(levels[i]));
  }
  in.boxes = at::stack(b);
  in.categories = at::stack(c);
  return in;
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
    const std::vector<at::Tensor>& features, const ImageSizes& sizes,
    const RPNHeadMaps* head_maps) {
  RECORD_USER_SCOPE("mrcnn/rpn/head_outputs");
  TORCH_CHECK(!features.empty(), "RegionProposalNetwork: no feature maps");
  HeadOutput h;
  h.num_images = features[0].size(0);
  TORCH_CHECK(static_cast<int64_t>(sizes.images.size()) == h.num_images,
              "RegionProposalNetwork: ", sizes.images.size(), " image sizes for a batch of ",
              h.num_images);

  const RPNHeadMaps maps = head_maps ? *head_maps : head_->forward(features);
  const auto& [logits, deltas] = maps;
  TORCH_CHECK(logits.size() == features.size() && deltas.size() == features.size(),
              "RegionProposalNetwork: head maps for ", logits.size(), " and ", deltas.size(),
              " levels, ", features.size(), " feature levels");
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

std::vector<int64_t> RegionProposalNetworkImpl::selectProposals(
    const HeadOutput& h, const ImageSizes& sizes, bool training_counts,
    std::vector<at::Tensor>& boxes_out, std::vector<at::Tensor>* scores_out,
    const std::vector<at::Tensor>& also) const {
  RECORD_USER_SCOPE("mrcnn/rpn/proposals");
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

  // Clip; the boxes too small or too unlikely are left out of the NMS (valid = false).
  std::vector<at::Tensor> clipped;
  for (int64_t i = 0; i < h.num_images; ++i)
    clipped.push_back(clipToImage(boxes[i], sizes.images[static_cast<size_t>(i)]));
  const at::Tensor b = at::stack(clipped);  // [N, K, 4]
  const at::Tensor w = b.select(2, 2) - b.select(2, 0);
  const at::Tensor ht = b.select(2, 3) - b.select(2, 1);
  const at::Tensor valid =
      (w >= options_.min_size) & (ht >= options_.min_size) & (prob >= options_.score_thresh);
  const NmsInputs in = nmsInputs(b, lvl, valid);
  const at::Tensor keep = ops::nms_keep_mask(in.boxes, nms_key, in.categories, valid,
                                             nms_thresh);  // NMS per level, [N, K]
  // How many each image keeps (and `also`): the one wait for the device in the proposals'
  // selection.
  std::vector<at::Tensor> counts = {keep.sum(1)};
  for (const at::Tensor& t : also)
    counts.push_back(t.to(at::kLong).reshape({1}));
  const at::Tensor kept = at::cat(counts).cpu();
  const int64_t k = keep.size(1);
  const at::Tensor position = at::arange(k, 0, -1, lvl.options());  // k .. 1: first is largest
  for (int64_t i = 0; i < h.num_images; ++i) {
    const int64_t count = kept[i].item<int64_t>();
    // The kept boxes by increasing index, then by decreasing NMS key, as batched_nms orders
    // them (stable on the one-NMS path; at::sort's own order on the per-level path).
    at::Tensor sel = std::get<1>(at::where(keep[i], position, 0).topk(count));
    const bool stable = !in.per_level[static_cast<size_t>(i)];
    sel = sel.index_select(0, std::get<1>(nms_key[i].index_select(0, sel).sort(stable, 0, true)));
    sel = sel.narrow(0, 0, std::min(post_n, count));
    boxes_out.push_back(b[i].index_select(0, sel));
    if (scores_out) scores_out->push_back(prob[i].index_select(0, sel));
  }
  const int64_t* also_read = kept.const_data_ptr<int64_t>() + h.num_images;
  return {also_read, also_read + also.size()};
}

RegionProposalNetworkImpl::AnchorSample RegionProposalNetworkImpl::sampleAnchors(
    const HeadOutput& h, const RPNTargets& targets) {
  RECORD_USER_SCOPE("mrcnn/rpn/sample");
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
  // Joined, then made boolean: one conversion for the batch.
  return {at::cat(labels, 0), at::cat(regression_targets, 0), at::cat(pos_masks, 0).to(at::kBool),
          at::cat(neg_masks, 0).to(at::kBool)};
}

RPNLosses RegionProposalNetworkImpl::lossesOf(const HeadOutput& h, const AnchorSample& s,
                                              int64_t positives, int64_t negatives) const {
  RECORD_USER_SCOPE("mrcnn/rpn/loss");
  // The sampled anchors, positives first, each group by increasing index.
  const at::Tensor pos = countedIndices(s.positive, positives);
  const at::Tensor sampled_idx = at::cat({pos, countedIndices(s.negative, negatives)}, 0);
  RPNLosses losses;
  losses.box = at::smooth_l1_loss(h.pred_deltas.index_select(0, pos),
                                  s.regression_targets.index_select(0, pos), at::Reduction::Sum,
                                  options_.smooth_l1_beta) /
               static_cast<double>(sampled_idx.numel());
  losses.objectness = at::binary_cross_entropy_with_logits(
      h.objectness.flatten().index_select(0, sampled_idx), s.labels.index_select(0, sampled_idx));
  losses.box_weighted = losses.box * options_.box_loss_weight;
  losses.sampled = static_cast<double>(sampled_idx.numel());
  return losses;
}

RPNOutput RegionProposalNetworkImpl::forward(const std::vector<at::Tensor>& features,
                                             const ImageSizes& sizes, const RPNTargets* targets,
                                             const RPNHeadMaps* head_maps) {
  const bool training = is_training();
  TORCH_CHECK(!training || targets != nullptr,
              "RegionProposalNetwork: targets are required in training");
  const HeadOutput h = runHead(features, sizes, head_maps);
  RPNOutput out;
  if (!training) {
    selectProposals(h, sizes, false, out.boxes, &out.scores);
    return out;
  }
  // The sample's counts are read with the proposals' (one wait for the device).
  const AnchorSample sample = sampleAnchors(h, *targets);
  const std::vector<int64_t> counts = selectProposals(
      h, sizes, true, out.boxes, &out.scores, {sample.positive.sum(), sample.negative.sum()});
  out.losses = lossesOf(h, sample, counts[0], counts[1]);
  return out;
}

RPNOutput RegionProposalNetworkImpl::validate(const std::vector<at::Tensor>& features,
                                              const ImageSizes& sizes, const RPNTargets& targets) {
  const HeadOutput h = runHead(features, sizes);
  RPNOutput out;
  selectProposals(h, sizes, /*training_counts=*/false, out.boxes, &out.scores);
  const AnchorSample sample = sampleAnchors(h, targets);
  const std::vector<int64_t> counts =
      selectProposals(h, sizes, /*training_counts=*/true, out.training_boxes, nullptr,
                      {sample.positive.sum(), sample.negative.sum()});
  out.losses = lossesOf(h, sample, counts[0], counts[1]);
  return out;
}

}  // namespace mrcnn::model

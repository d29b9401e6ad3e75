#include "engine/model/roi_heads.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <limits>
#include <string>
#include <tuple>

#include "engine/model/counted_indices.h"
#include "engine/ops/box_coder.h"
#include "engine/ops/box_iou.h"
#include "engine/ops/nms.h"

namespace mrcnn::model {
namespace {

const RoIHeadsOptions& validated(const RoIHeadsOptions& o) {
  TORCH_CHECK(!o.with_masks || !o.mask_head_layers.empty(), "RoIHeads: mask_head_layers is empty");
  TORCH_CHECK(o.num_classes >= 2, "RoIHeads: num_classes must be at least 2 (background and ",
              "one class), got ", o.num_classes);
  TORCH_CHECK(
      o.in_channels > 0 && o.representation_size > 0 && o.box_roi_size > 0 && o.mask_roi_size > 0,
      "RoIHeads: in_channels, representation_size and the RoI sizes must be positive");
  TORCH_CHECK(o.min_level >= 1 && o.min_level <= 5 && o.max_level >= o.min_level,
              "RoIHeads: levels must satisfy 1 <= min_level <= 5 and min_level <= max_level, got ",
              o.min_level, "..", o.max_level);
  TORCH_CHECK(o.bg_iou_thresh_lo >= 0.0 && o.bg_iou_thresh_lo <= o.bg_iou_thresh_hi &&
                  o.bg_iou_thresh_hi <= o.fg_iou_thresh,
              "RoIHeads: IoU thresholds must satisfy 0 <= bg_thresh_lo <= bg_thresh_hi <= ",
              "fg_thresh, got bg_thresh_lo ", o.bg_iou_thresh_lo, ", bg_thresh_hi ",
              o.bg_iou_thresh_hi, ", fg_thresh ", o.fg_iou_thresh);
  TORCH_CHECK(o.batch_size_per_image > 0, "RoIHeads: batch_size_per_image must be positive, got ",
              o.batch_size_per_image);
  TORCH_CHECK(o.detections_per_image > 0, "RoIHeads: detections_per_image must be positive, got ",
              o.detections_per_image);
  return o;
}

ops::BoxCoderWeights coderWeights(const std::array<double, 4>& w) {
  return ops::BoxCoderWeights{w[0], w[1], w[2], w[3]};
}

// Clamps x to [0, width] and y to [0, height]; boxes [..., 4].
at::Tensor clipToImage(const at::Tensor& boxes, const std::array<int64_t, 2>& size) {
  const auto h = static_cast<double>(size[0]), w = static_cast<double>(size[1]);
  const int64_t last = boxes.dim() - 1;
  const at::Tensor x = boxes.slice(last, 0, 4, 2).clamp(0.0, w);
  const at::Tensor y = boxes.slice(last, 1, 4, 2).clamp(0.0, h);
  return at::stack({x, y}, /*dim=*/boxes.dim()).reshape(boxes.sizes());
}

std::vector<int64_t> countsOf(const std::vector<at::Tensor>& per_image) {
  std::vector<int64_t> n;
  n.reserve(per_image.size());
  for (const at::Tensor& t : per_image)
    n.push_back(t.size(0));
  return n;
}

}  // namespace

RoIHeadsOptions toRoIHeadsOptions(const RoIHeadsSpecFields& s) {
  RoIHeadsOptions o;
  o.num_classes = s.num_classes;
  o.min_level = static_cast<int>(s.min_level);
  o.max_level = static_cast<int>(s.max_level);
  o.fg_iou_thresh = s.fg_thresh;
  o.bg_iou_thresh_hi = s.bg_thresh_hi;
  o.bg_iou_thresh_lo = s.bg_thresh_lo;
  o.batch_size_per_image = s.batch_size_per_im;
  o.positive_fraction = s.fg_fraction;
  o.representation_size = s.fast_rcnn_mlp_head_dim;
  o.bbox_reg_weights = s.bbox_reg_weights;
  o.box_loss_weight = s.fast_rcnn_box_loss_weight;
  o.mask_loss_weight = s.mrcnn_weight_loss_mask;
  o.with_masks = s.include_mask;
  o.mask_head_layers = s.mask_head_layers;
  TORCH_CHECK(s.mrcnn_resolution >= 2 && s.mrcnn_resolution % 2 == 0,
              "maskrcnn_config.mrcnn_resolution: must be even (the mask head doubles its ",
              "RoIAlign size), got ", s.mrcnn_resolution);
  o.mask_roi_size = s.mrcnn_resolution / 2;
  o.detections_per_image = s.test_detections_per_image;
  o.nms_thresh = s.test_nms;
  o.score_thresh = s.test_score_thresh;
  TORCH_CHECK(o.bg_iou_thresh_lo <= o.bg_iou_thresh_hi,
              "maskrcnn_config.bg_thresh_lo: must not exceed bg_thresh_hi (", s.bg_thresh_lo, " > ",
              s.bg_thresh_hi, ")");
  TORCH_CHECK(o.bg_iou_thresh_hi <= o.fg_iou_thresh,
              "maskrcnn_config.bg_thresh_hi: must not exceed fg_thresh (", s.bg_thresh_hi, " > ",
              s.fg_thresh, ")");
  return o;
}

RoIHeadsImpl::RoIHeadsImpl(RoIHeadsOptions options, std::optional<at::Generator> generator)
    : options_(validated(options)),
      box_roi_pool_(MultiScaleRoIAlignOptions{options.box_roi_size, options.sampling_ratio,
                                              options.canonical_scale, options.canonical_level}),
      mask_roi_pool_(MultiScaleRoIAlignOptions{options.mask_roi_size, options.sampling_ratio,
                                               options.canonical_scale, options.canonical_level}),
      // torchvision's proposal matcher: no low-quality matches (the ground truth is among
      // the proposals anyway). Below bg_hi is background; bg_lo is applied on top.
      matcher_(MatcherOptions{options.fg_iou_thresh, options.bg_iou_thresh_hi,
                              /*allow_low_quality_matches=*/false}),
      sampler_(SamplerOptions{options.batch_size_per_image, options.positive_fraction},
               std::move(generator)) {
  const int64_t box_features = options_.in_channels * options_.box_roi_size * options_.box_roi_size;
  box_head_ = register_module("box_head", TwoMLPHead(box_features, options_.representation_size));
  box_predictor_ = register_module(
      "box_predictor", FastRCNNPredictor(options_.representation_size, options_.num_classes));
  if (options_.with_masks) {
    MaskHeadOptions mask;
    mask.in_channels = options_.in_channels;
    mask.layers =
        options_.mask_head_widths.empty() ? options_.mask_head_layers : options_.mask_head_widths;
    TORCH_CHECK(mask.layers.size() == options_.mask_head_layers.size(),
                "RoIHeads: ", mask.layers.size(), " pruned mask head widths for ",
                options_.mask_head_layers.size(), " layers");
    mask.dilation = 1;
    mask.num_classes = options_.num_classes;
    mask_head_ = register_module("mask_head", MaskRCNNHeads(mask));
    mask_predictor_ = register_module(
        "mask_predictor", MaskRCNNPredictor(mask.layers.back(), options_.mask_head_layers.back(),
                                            options_.num_classes));
  }
}

std::vector<std::pair<std::string, std::string>> RoIHeadsImpl::legacyParameterNames() const {
  std::vector<std::pair<std::string, std::string>> names;
  if (!mask_head_) return names;
  for (const auto& [old_name, new_name] : mask_head_->legacyParameterNames())
    names.emplace_back("mask_head." + old_name, "mask_head." + new_name);
  return names;
}

std::vector<at::Tensor> RoIHeadsImpl::poolingMaps(const std::vector<at::Tensor>& features) const {
  const auto expected = static_cast<size_t>(options_.max_level - options_.min_level + 1);
  TORCH_CHECK(features.size() == expected, "RoIHeads: expected ", expected,
              " feature maps (levels ", options_.min_level, "..", options_.max_level, "), got ",
              features.size());
  const auto pooled = static_cast<size_t>(std::min(options_.max_level, 5) - options_.min_level + 1);
  // RoIAlign reads NCHW and channels-last maps where they are, all in one layout: the first
  // map's (the others are converted once here, not once per pooling, boxes then masks, where
  // they differ). Channels-last maps give channels-last pooled features, which the heads'
  // convolutions read without a transpose.
  const at::MemoryFormat layout = features[0].suggest_memory_format();
  std::vector<at::Tensor> maps;
  maps.reserve(pooled);
  for (size_t l = 0; l < pooled; ++l)
    maps.push_back(features[l].contiguous(layout));
  return maps;
}

std::pair<at::Tensor, at::Tensor> RoIHeadsImpl::assignTargets(const at::Tensor& proposals,
                                                              const at::Tensor& gt_boxes,
                                                              const at::Tensor& gt_labels) const {
  const int64_t n = proposals.size(0);
  const at::TensorOptions long_options = proposals.options().dtype(at::kLong);
  if (gt_boxes.numel() == 0) {  // a background image: every proposal background
    return {at::zeros({n}, long_options), at::zeros({n}, long_options)};
  }
  const at::Tensor iou = ops::box_iou(gt_boxes, proposals);
  const at::Tensor matched = matcher_(iou);
  const at::Tensor clamped = matched.clamp_min(0);
  at::Tensor labels = gt_labels.to(long_options).index_select(0, clamped);
  labels.masked_fill_(matched == Matcher::kBelowLowThreshold, 0);
  labels.masked_fill_(matched == Matcher::kBetweenThresholds, -1);
  if (options_.bg_iou_thresh_lo > 0.0) {
    // TAO's background band [bg_lo, bg_hi): proposals overlapping nothing enough are not
    // even background.
    const at::Tensor best = std::get<0>(iou.max(/*dim=*/0));
    labels.masked_fill_(
        (matched == Matcher::kBelowLowThreshold) & (best < options_.bg_iou_thresh_lo), -1);
  }
  return {clamped, labels};
}

RoIHeadsImpl::Sample RoIHeadsImpl::selectTrainingSamples(const std::vector<at::Tensor>& proposals,
                                                         const RoIHeadsTargets& targets) {
  RECORD_USER_SCOPE("mrcnn/roi_heads/sample");
  const size_t num_images = proposals.size();
  TORCH_CHECK(targets.boxes.size() == num_images && targets.labels.size() == num_images,
              "RoIHeads: ground truth (boxes, labels) for ", targets.boxes.size(), ", ",
              targets.labels.size(), " images in a batch of ", num_images);
  const bool cropped = targets.masks.empty() && !targets.mask_crops.empty();
  const size_t mask_images = cropped ? targets.mask_crops.size() : targets.masks.size();
  TORCH_CHECK(!options_.with_masks || mask_images == num_images,
              "RoIHeads: ground-truth masks for ", mask_images, " images in a batch of ",
              num_images);

  std::vector<at::Tensor> all_rois, gt_boxes, matched, labels;
  for (size_t i = 0; i < num_images; ++i) {
    const at::Tensor& p = proposals[i];
    const at::Tensor& b = targets.boxes[i];
    const at::Tensor& l = targets.labels[i];
    TORCH_CHECK(b.dim() == 2 && b.size(1) == 4 && at::isFloatingType(b.scalar_type()),
                "RoIHeads: image ", i, ": ground-truth boxes must be floating point [M, 4], got ",
                b.sizes(), " ", b.scalar_type());
    TORCH_CHECK(l.dim() == 1 && l.size(0) == b.size(0) && l.scalar_type() == at::kLong,
                "RoIHeads: image ", i, ": ground-truth labels must be int64 [", b.size(0),
                "], got ", l.sizes(), " ", l.scalar_type());
    if (l.numel() > 0 && l.is_cpu()) {
      const int64_t lo = l.min().item<int64_t>(), hi = l.max().item<int64_t>();
      TORCH_CHECK(lo >= 1 && hi < options_.num_classes, "RoIHeads: image ", i,
                  ": ground-truth labels must be in 1..", options_.num_classes - 1, ", got ", lo,
                  "..", hi);
    } else if (l.numel() > 0) {
      // On a GPU the same check without making the host wait for it (a device-side assert).
      at::_assert_async(((l >= 1) & (l < options_.num_classes)).all(),
                        "RoIHeads: ground-truth labels must be in 1.." +
                            std::to_string(options_.num_classes - 1));
    }
    if (options_.with_masks && cropped) {
      TORCH_CHECK(targets.mask_crops[i].size() == b.size(0), "RoIHeads: image ", i, ": ",
                  targets.mask_crops[i].size(), " cropped ground-truth masks for ", b.size(0),
                  " boxes");
    } else if (options_.with_masks) {
      const at::Tensor& m = targets.masks[i];
      TORCH_CHECK(m.dim() == 3 && m.size(0) == b.size(0), "RoIHeads: image ", i,
                  ": ground-truth masks must be [", b.size(0), ", H, W], got ", m.sizes());
    }
    const at::Tensor gt = b.to(p.options());
    all_rois.push_back(at::cat({p, gt}, 0));
    auto [m, lab] = assignTargets(all_rois.back(), gt, l);
    gt_boxes.push_back(gt);
    matched.push_back(std::move(m));
    labels.push_back(std::move(lab));
  }

  std::vector<SampledMasks> sampled = targets.sampled;
  if (sampled.empty()) {
    sampled = sampler_(labels, targets.sample_keys);
  } else {
    TORCH_CHECK(sampled.size() == num_images, "RoIHeads: given samples for ", sampled.size(),
                " images in a batch of ", num_images);
  }

  // How many RoIs each image samples, and how many of them are positive: one copy to the
  // host for the batch (the only wait for the device in the RoI heads' training step).
  std::vector<at::Tensor> taken, counts;
  for (size_t i = 0; i < num_images; ++i) {
    const int64_t n = all_rois[i].size(0);
    TORCH_CHECK(sampled[i].positive.numel() == n && sampled[i].negative.numel() == n,
                "RoIHeads: image ", i, ": a sample mask must cover its ", n,
                " proposals (ground truth appended)");
    const at::Tensor positive = sampled[i].positive.to(all_rois[i].device()).to(at::kBool);
    taken.push_back(positive | sampled[i].negative.to(all_rois[i].device()).to(at::kBool));
    counts.push_back(taken.back().sum());
    counts.push_back((taken.back() & (labels[i] > 0)).sum());  // the mask branch's RoIs
  }
  const at::Tensor counted = num_images > 0 ? at::stack(counts).cpu() : at::Tensor();

  Sample s;
  const ops::BoxCoderWeights weights = coderWeights(options_.bbox_reg_weights);
  for (size_t i = 0; i < num_images; ++i) {
    // In index order, positives and negatives mixed, as torchvision.
    const at::Tensor take =
        countedIndices(taken[i], counted[static_cast<int64_t>(2 * i)].item<int64_t>());
    s.positives.push_back(counted[static_cast<int64_t>(2 * i + 1)].item<int64_t>());
    s.rois.push_back(all_rois[i].index_select(0, take));
    s.labels.push_back(labels[i].index_select(0, take));
    s.matched_idxs.push_back(matched[i].index_select(0, take));
    // Background images regress towards a dummy box; their targets are never used.
    const at::Tensor gt =
        gt_boxes[i].numel() == 0 ? at::zeros({1, 4}, all_rois[i].options()) : gt_boxes[i];
    s.regression_targets.push_back(
        ops::encode_boxes(gt.index_select(0, s.matched_idxs.back()), s.rois.back(), weights));
  }
  return s;
}

RoIHeadsLosses RoIHeadsImpl::fastRCNNLoss(const at::Tensor& class_logits,
                                          const at::Tensor& box_regression,
                                          const Sample& sample) const {
  RECORD_USER_SCOPE("mrcnn/roi_heads/box_loss");
  const at::Tensor labels = at::cat(sample.labels, 0);
  const at::Tensor targets = at::cat(sample.regression_targets, 0);
  RoIHeadsLosses losses;
  if (labels.numel() == 0) {  // nothing sampled (no proposals, no ground truth): no signal
    losses.classifier = class_logits.sum() * 0.0;
    losses.box_reg = box_regression.sum() * 0.0;
    return losses;
  }
  losses.classifier = at::cross_entropy_loss(class_logits, labels);
  // Each positive's deltas of its ground-truth class.
  int64_t positives = 0;
  for (const int64_t p : sample.positives)
    positives += p;
  const at::Tensor pos = countedIndices(labels > 0, positives);
  const at::Tensor rows = pos * class_logits.size(1) + labels.index_select(0, pos);
  losses.box_reg = at::smooth_l1_loss(box_regression.reshape({-1, 4}).index_select(0, rows),
                                      targets.index_select(0, pos), at::Reduction::Sum,
                                      /*beta=*/1.0 / 9.0) /
                   static_cast<double>(labels.numel());
  return losses;
}

namespace {

// Each class's logit against all the others, l_c - logsumexp_{j != c} l_j, for the most likely
// class of each row (the others' get at most 0, less than kNmsCertainLogit: the logsumexp
// there leaves out the most likely class instead of their own).
at::Tensor certainLogits(const at::Tensor& logits) {
  const at::Tensor best = logits.argmax(-1, /*keepdim=*/true);
  const at::Tensor rest = logits.scatter(-1, best, -std::numeric_limits<float>::infinity());
  return logits - at::logsumexp(rest, -1, /*keepdim=*/true);
}

}  // namespace

std::vector<Detections> RoIHeadsImpl::postprocessDetections(
    const at::Tensor& class_logits, const at::Tensor& box_regression,
    const std::vector<at::Tensor>& proposals, const ImageSizes& sizes) const {
  RECORD_USER_SCOPE("mrcnn/roi_heads/postprocess");
  const int64_t num_classes = class_logits.size(-1);
  // Under autocast the predictor's outputs are bfloat16 or half: boxes and scores are decoded
  // in float (bfloat16 would put a box edge at 1000 px only to the nearest 4 px).
  const at::Tensor regression = box_regression.to(at::kFloat);
  const at::Tensor boxes = ops::decode_boxes(regression, at::cat(proposals, 0).to(at::kFloat),
                                             coderWeights(options_.bbox_reg_weights))
                               .reshape({-1, num_classes, 4});
  const at::Tensor logits = class_logits.to(at::kFloat);
  const at::Tensor scores = at::softmax(logits, -1);
  // NMS by probability, near-certain ones by their logit against the other classes
  // (ops::kNmsCertainLogit): the same detections in every runtime.
  const at::Tensor certain = certainLogits(logits);
  const at::Tensor nms_keys = at::where(certain >= ops::kNmsCertainLogit, certain, scores);
  const std::vector<int64_t> counts = countsOf(proposals);
  const std::vector<at::Tensor> boxes_per_image = boxes.split_with_sizes(counts, 0);
  const std::vector<at::Tensor> scores_per_image = scores.split_with_sizes(counts, 0);
  const std::vector<at::Tensor> keys_per_image = nms_keys.split_with_sizes(counts, 0);
  const at::Tensor class_ids =
      at::arange(num_classes, class_logits.options().dtype(at::kLong)).view({1, -1});

  std::vector<Detections> out;
  for (size_t i = 0; i < proposals.size(); ++i) {
    const int64_t n = counts[i];
    // Every class prediction but the background one is a candidate of its own.
    at::Tensor b = clipToImage(boxes_per_image[i], sizes.images[i]).slice(1, 1).reshape({-1, 4});
    at::Tensor s = scores_per_image[i].slice(1, 1).reshape({-1});
    at::Tensor key = keys_per_image[i].slice(1, 1).reshape({-1});
    at::Tensor l = class_ids.expand({n, num_classes}).slice(1, 1).reshape({-1});

    const at::Tensor confident = at::where(s > options_.score_thresh)[0];
    b = b.index_select(0, confident);
    s = s.index_select(0, confident);
    key = key.index_select(0, confident);
    l = l.index_select(0, confident);
    // torchvision's remove_small_boxes with min_size 1e-2.
    const at::Tensor w = b.select(1, 2) - b.select(1, 0);
    const at::Tensor h = b.select(1, 3) - b.select(1, 1);
    const at::Tensor big = at::where((w >= 1e-2) & (h >= 1e-2))[0];
    b = b.index_select(0, big);
    s = s.index_select(0, big);
    key = key.index_select(0, big);
    l = l.index_select(0, big);

    at::Tensor keep = ops::batched_nms(b, key, l, options_.nms_thresh);
    keep = keep.narrow(0, 0, std::min(options_.detections_per_image, keep.size(0)));
    out.push_back(
        Detections{b.index_select(0, keep), s.index_select(0, keep), l.index_select(0, keep), {}});
  }
  return out;
}

at::Tensor RoIHeadsImpl::maskLogits(const std::vector<at::Tensor>& maps,
                                    const std::vector<at::Tensor>& boxes, const ImageSizes& sizes) {
  RECORD_USER_SCOPE("mrcnn/roi_heads/mask_head");
  return mask_predictor_->forward(mask_head_->forward(mask_roi_pool_(maps, boxes, sizes.padded)));
}

RoIHeadsLosses RoIHeadsImpl::trainingLosses(const std::vector<at::Tensor>& maps,
                                            const std::vector<at::Tensor>& proposals,
                                            const ImageSizes& sizes,
                                            const RoIHeadsTargets& targets) {
  const Sample sample = selectTrainingSamples(proposals, targets);
  at::Tensor class_logits, box_regression;
  {
    RECORD_USER_SCOPE("mrcnn/roi_heads/box_head");
    std::tie(class_logits, box_regression) =
        box_predictor_->forward(box_head_->forward(box_roi_pool_(maps, sample.rois, sizes.padded)));
  }
  RoIHeadsLosses losses = fastRCNNLoss(class_logits, box_regression, sample);
  losses.box_reg_weighted = losses.box_reg * options_.box_loss_weight;
  for (const at::Tensor& l : sample.labels)
    losses.sampled += static_cast<double>(l.numel());
  if (options_.with_masks) {
    // The mask branch learns from the positive RoIs only.
    std::vector<at::Tensor> positive_rois, positive_matched;
    for (size_t i = 0; i < sample.rois.size(); ++i) {
      const at::Tensor pos = countedIndices(sample.labels[i] > 0, sample.positives[i]);
      positive_rois.push_back(sample.rois[i].index_select(0, pos));
      positive_matched.push_back(sample.matched_idxs[i].index_select(0, pos));
      losses.mask_positives += static_cast<double>(pos.numel());
    }
    const at::Tensor logits = maskLogits(maps, positive_rois, sizes);
    if (targets.masks.empty() && !targets.mask_crops.empty()) {
      // Cropped masks: the targets are read from the crops, no mask is made whole.
      losses.mask =
          maskRCNNLoss(logits, positive_rois, targets.mask_crops, targets.labels, positive_matched);
    } else {
      losses.mask =
          maskRCNNLoss(logits, positive_rois, targets.masks, targets.labels, positive_matched);
    }
    losses.mask_weighted = losses.mask * options_.mask_loss_weight;
  }
  return losses;
}

std::vector<Detections> RoIHeadsImpl::detectFrom(const std::vector<at::Tensor>& maps,
                                                 const std::vector<at::Tensor>& proposals,
                                                 const ImageSizes& sizes) {
  at::Tensor class_logits, box_regression;
  {
    RECORD_USER_SCOPE("mrcnn/roi_heads/box_head");
    std::tie(class_logits, box_regression) =
        box_predictor_->forward(box_head_->forward(box_roi_pool_(maps, proposals, sizes.padded)));
  }
  std::vector<Detections> detections =
      postprocessDetections(class_logits, box_regression, proposals, sizes);
  if (options_.with_masks) {
    std::vector<at::Tensor> boxes, labels;
    for (const Detections& d : detections) {
      boxes.push_back(d.boxes);
      labels.push_back(d.labels);
    }
    const std::vector<at::Tensor> masks = maskRCNNInference(maskLogits(maps, boxes, sizes), labels);
    for (size_t i = 0; i < detections.size(); ++i)
      detections[i].masks = masks[i].contiguous();  // NCHW whatever the heads' layout
  }
  return detections;
}

std::vector<at::Tensor> RoIHeadsImpl::checkedMaps(const std::vector<at::Tensor>& features,
                                                  const std::vector<at::Tensor>& proposals,
                                                  const ImageSizes& sizes) const {
  std::vector<at::Tensor> maps = poolingMaps(features);
  const auto num_images = static_cast<size_t>(maps[0].size(0));
  TORCH_CHECK(proposals.size() == num_images, "RoIHeads: proposals for ", proposals.size(),
              " images in a batch of ", num_images);
  TORCH_CHECK(sizes.images.size() == num_images, "RoIHeads: ", sizes.images.size(),
              " image sizes for a batch of ", num_images);
  for (size_t i = 0; i < num_images; ++i) {
    TORCH_CHECK(proposals[i].dim() == 2 && proposals[i].size(1) == 4, "RoIHeads: image ", i,
                ": proposals must be [P, 4], got ", proposals[i].sizes());
  }
  return maps;
}

RoIHeadsOutput RoIHeadsImpl::forward(const std::vector<at::Tensor>& features,
                                     const std::vector<at::Tensor>& proposals,
                                     const ImageSizes& sizes, const RoIHeadsTargets* targets) {
  const std::vector<at::Tensor> maps = checkedMaps(features, proposals, sizes);
  const bool training = is_training();
  TORCH_CHECK(!training || targets != nullptr, "RoIHeads: targets are required in training");
  RoIHeadsOutput out;
  if (training) {
    out.losses = trainingLosses(maps, proposals, sizes, *targets);
  } else {
    out.detections = detectFrom(maps, proposals, sizes);
  }
  return out;
}

RoIHeadsOutput RoIHeadsImpl::validate(const std::vector<at::Tensor>& features,
                                      const std::vector<at::Tensor>& training_proposals,
                                      const std::vector<at::Tensor>& proposals,
                                      const ImageSizes& sizes, const RoIHeadsTargets& targets) {
  const std::vector<at::Tensor> maps = checkedMaps(features, proposals, sizes);
  checkedMaps(features, training_proposals, sizes);
  RoIHeadsOutput out;
  out.losses = trainingLosses(maps, training_proposals, sizes, targets);
  out.detections = detectFrom(maps, proposals, sizes);
  return out;
}

}  // namespace mrcnn::model

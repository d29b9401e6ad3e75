// The RoI heads, torchvision's RoIHeads for Mask R-CNN: proposals (plus, in training, the
// ground-truth boxes) matched to the ground truth and sampled; multi-level RoIAlign
// (multiscale_roi_align.h) to 7x7 for the box head (two fully connected layers) and its
// predictor (class scores, class-specific box deltas; box_head.h); in training the
// classification loss (cross entropy over the sample) and the box regression loss (smooth L1,
// beta 1/9, of each positive's deltas of its class against its targets encoded with
// bbox_reg_weights, summed and divided by the sample size), and the mask branch (mask_head.h)
// on the positive RoIs (RoIAlign 14x14) with its loss; in inference softmax scores, decoded
// and clipped boxes, background dropped, score threshold, boxes under 1e-2 px removed,
// per-class NMS, the best detections_per_image, and the mask probabilities of the detections
// at the mask head's resolution (pasting into the image is the model's transform's job).
// Matching generalises torchvision's to TAO's three thresholds (torchvision is fg = bg_hi =
// 0.5, bg_lo = 0): IoU >= fg foreground, bg_lo <= IoU < bg_hi background, the rest ignored.
// State_dict names: roi_heads.box_head.fc6/fc7.*, roi_heads.box_predictor.cls_score/bbox_pred.*,
// roi_heads.mask_head.*, roi_heads.mask_predictor.* (see mask_head.h).
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/box_head.h"
#include "engine/model/cropped_masks.h"
#include "engine/model/mask_head.h"
#include "engine/model/matcher.h"
#include "engine/model/multiscale_roi_align.h"
#include "engine/model/rpn.h"  // ImageSizes, SampledMasks
#include "engine/model/sampler.h"

namespace mrcnn::model {

// Defaults are maskrcnn_resnet50_fpn's.
struct RoIHeadsOptions {
  int64_t num_classes = 91;  // including background
  int64_t in_channels = 256;
  // Levels of the FPN maps given to forward(): min_level..max_level; RoIAlign uses
  // min_level..min(max_level, 5), torchvision's featmap_names '0'..'3'.
  int min_level = 2;
  int max_level = 6;
  int64_t box_roi_size = 7;
  int64_t mask_roi_size = 14;
  int64_t sampling_ratio = 2;
  int64_t canonical_scale = 224;  // the level mapping: k = floor(k0 + log2(sqrt(area) / s0))
  int64_t canonical_level = 4;
  int64_t representation_size = 1024;  // the spec's fast_rcnn_mlp_head_dim
  bool with_masks = true;
  // The mask head's 3x3 convolutions, one width each (torchvision: four of 256); the
  // predictor's transposed convolution keeps the last width.
  std::vector<int64_t> mask_head_layers{256, 256, 256, 256};
  // A pruned mask head: its convolutions' widths (as many as mask_head_layers); the
  // predictor's transposed convolution then takes the last of them in and still gives
  // mask_head_layers.back() out. Empty: mask_head_layers.
  std::vector<int64_t> mask_head_widths{};
  // Training: matching and sampling (the spec's fg_thresh, bg_thresh_hi, bg_thresh_lo,
  // batch_size_per_im, fg_fraction). A proposal with IoU >= fg is foreground; in
  // [bg_lo, bg_hi) background; otherwise ignored.
  double fg_iou_thresh = 0.5;
  double bg_iou_thresh_hi = 0.5;
  double bg_iou_thresh_lo = 0.0;
  int64_t batch_size_per_image = 512;
  double positive_fraction = 0.25;
  std::array<double, 4> bbox_reg_weights{10.0, 10.0, 5.0, 5.0};
  double box_loss_weight = 1.0;   // the spec's fast_rcnn_box_loss_weight
  double mask_loss_weight = 1.0;  // the spec's mrcnn_weight_loss_mask
  // Inference.
  double score_thresh = 0.05;
  double nms_thresh = 0.5;  // the spec's test_nms
  int64_t detections_per_image = 100;
};

// The spec's RoI head fields (data_config.num_classes, maskrcnn_config), as plain values:
// engine/model does not depend on the spec library; the engine fills this from the spec
// (bbox_reg_weights and mask_head_layers already parsed: engine/setup/model_config.cpp) and
// calls toRoIHeadsOptions.
struct RoIHeadsSpecFields {
  uint32_t num_classes = 91;
  float fg_thresh = 0.5f;
  float bg_thresh_hi = 0.5f;
  float bg_thresh_lo = 0.0f;
  uint32_t batch_size_per_im = 512;
  float fg_fraction = 0.25f;
  uint32_t fast_rcnn_mlp_head_dim = 1024;
  std::array<double, 4> bbox_reg_weights{10.0, 10.0, 5.0, 5.0};
  float fast_rcnn_box_loss_weight = 1.0f;
  float mrcnn_weight_loss_mask = 1.0f;
  bool include_mask = true;
  uint32_t mrcnn_resolution = 28;  // the predicted mask's side: twice the mask RoIAlign's
  std::vector<int64_t> mask_head_layers{256, 256, 256, 256};  // parsed maskrcnn_config extension
  uint32_t min_level = 2;
  uint32_t max_level = 6;
  uint32_t test_detections_per_image = 100;
  float test_nms = 0.5f;
  float test_score_thresh = 0.05f;
};

// Throws (c10::Error naming the field) on values the heads cannot use: thresholds out of
// order (bg_thresh_lo <= bg_thresh_hi <= fg_thresh), an odd mrcnn_resolution.
RoIHeadsOptions toRoIHeadsOptions(const RoIHeadsSpecFields& spec);

// Ground truth per image, boxes [M_i, 4] xyxy float, labels int64 [M_i] (1..C-1), masks
// uint8 [M_i, H_i, W_i] at the transformed image's size (with_masks). Optionally each image's
// sample (uint8 masks over its proposals after the ground truth is appended) instead of
// drawing one: for parity with a sample made elsewhere.
struct RoIHeadsTargets {
  std::vector<at::Tensor> boxes;
  std::vector<at::Tensor> labels;
  std::vector<at::Tensor> masks;         // whole masks, or (empty)
  std::vector<CroppedMasks> mask_crops;  // cropped ones: see MaskRCNNTargets
  std::vector<SampledMasks> sampled;     // empty: the sampler draws
  std::vector<uint64_t> sample_keys;     // per image, optional: see MaskRCNNTargets
};

struct RoIHeadsLosses {
  at::Tensor classifier;  // torchvision's loss_classifier
  at::Tensor box_reg;     // loss_box_reg (unweighted)
  at::Tensor mask;        // loss_mask (unweighted; undefined without masks)
  // What training adds up: box_reg * box_loss_weight, mask * mask_loss_weight.
  at::Tensor box_reg_weighted;
  at::Tensor mask_weighted;
  double sampled = 0;         // RoIs sampled: the denominator of classifier and box_reg
  double mask_positives = 0;  // positive RoIs: the mask loss's (each of M x M pixels)
};

struct Detections {
  at::Tensor boxes;   // [K, 4] xyxy in the transformed image's pixels
  at::Tensor scores;  // [K]
  at::Tensor labels;  // [K] int64
  at::Tensor masks;   // [K, 1, M, M] probabilities at the mask head's resolution (with_masks)
};

struct RoIHeadsOutput {
  std::vector<Detections> detections;    // inference (not training) and validate()
  std::optional<RoIHeadsLosses> losses;  // training and validate()
};

class RoIHeadsImpl : public torch::nn::Module {
 public:
  // generator: the sampler's random source (see BalancedPositiveNegativeSampler).
  explicit RoIHeadsImpl(RoIHeadsOptions options = {},
                        std::optional<at::Generator> generator = std::nullopt);

  // features: the FPN maps min_level..max_level, [N, C, H_l, W_l]; proposals per image
  // [P_i, 4] (detached, as the RPN gives them). sizes: the padded size gives RoIAlign's
  // scales, each image's size clips its detections. targets: required in training
  // (is_training()); the ground truth is checked (shapes, dtypes, labels 1..C-1).
  RoIHeadsOutput forward(const std::vector<at::Tensor>& features,
                         const std::vector<at::Tensor>& proposals, const ImageSizes& sizes,
                         const RoIHeadsTargets* targets = nullptr);

  // Validation, in either mode: the losses training computes on `training_proposals` (its
  // sample drawn from targets.sample_keys when given) and the detections inference gives on
  // `proposals`, from the same feature maps.
  RoIHeadsOutput validate(const std::vector<at::Tensor>& features,
                          const std::vector<at::Tensor>& training_proposals,
                          const std::vector<at::Tensor>& proposals, const ImageSizes& sizes,
                          const RoIHeadsTargets& targets);

  const RoIHeadsOptions& options() const { return options_; }

  // (old name, current name) pairs relative to roi_heads (the mask head's old names).
  std::vector<std::pair<std::string, std::string>> legacyParameterNames() const;

  // One image's proposals (ground truth already appended) against its ground truth: each
  // proposal's matched ground-truth index (0 where unmatched or without ground truth) and
  // its label: the matched class (IoU >= fg), 0 background (bg_lo <= IoU < bg_hi), -1
  // ignored (otherwise).
  std::pair<at::Tensor, at::Tensor> assignTargets(const at::Tensor& proposals,
                                                  const at::Tensor& gt_boxes,
                                                  const at::Tensor& gt_labels) const;

  TwoMLPHead& boxHead() { return box_head_; }
  FastRCNNPredictor& boxPredictor() { return box_predictor_; }
  MaskRCNNHeads& maskHead() { return mask_head_; }                // null without masks
  MaskRCNNPredictor& maskPredictor() { return mask_predictor_; }  // null without masks
  const MultiScaleRoIAlign& boxRoIPool() const { return box_roi_pool_; }
  const MultiScaleRoIAlign& maskRoIPool() const { return mask_roi_pool_; }

 private:
  // The maps RoIAlign pools from: min_level..min(max_level, 5).
  std::vector<at::Tensor> poolingMaps(const std::vector<at::Tensor>& features) const;
  // poolingMaps, after checking the proposals and sizes against the batch.
  std::vector<at::Tensor> checkedMaps(const std::vector<at::Tensor>& features,
                                      const std::vector<at::Tensor>& proposals,
                                      const ImageSizes& sizes) const;
  RoIHeadsLosses trainingLosses(const std::vector<at::Tensor>& maps,
                                const std::vector<at::Tensor>& proposals, const ImageSizes& sizes,
                                const RoIHeadsTargets& targets);
  std::vector<Detections> detectFrom(const std::vector<at::Tensor>& maps,
                                     const std::vector<at::Tensor>& proposals,
                                     const ImageSizes& sizes);

  // Training: per image the sampled RoIs (proposals with the ground truth appended), their
  // labels, matched ground-truth indices and regression targets.
  struct Sample {
    std::vector<at::Tensor> rois, labels, matched_idxs, regression_targets;
    std::vector<int64_t> positives;  // per image, the RoIs of labels > 0 (counted on the host)
  };
  Sample selectTrainingSamples(const std::vector<at::Tensor>& proposals,
                               const RoIHeadsTargets& targets);
  RoIHeadsLosses fastRCNNLoss(const at::Tensor& class_logits, const at::Tensor& box_regression,
                              const Sample& sample) const;
  std::vector<Detections> postprocessDetections(const at::Tensor& class_logits,
                                                const at::Tensor& box_regression,
                                                const std::vector<at::Tensor>& proposals,
                                                const ImageSizes& sizes) const;
  // The mask head and predictor on RoIAlign of `boxes`: [sum K_i, C, M, M] logits.
  at::Tensor maskLogits(const std::vector<at::Tensor>& maps, const std::vector<at::Tensor>& boxes,
                        const ImageSizes& sizes);

  RoIHeadsOptions options_;
  MultiScaleRoIAlign box_roi_pool_;
  MultiScaleRoIAlign mask_roi_pool_;
  TwoMLPHead box_head_{nullptr};
  FastRCNNPredictor box_predictor_{nullptr};
  MaskRCNNHeads mask_head_{nullptr};
  MaskRCNNPredictor mask_predictor_{nullptr};
  Matcher matcher_;
  BalancedPositiveNegativeSampler sampler_;
};
TORCH_MODULE(RoIHeads);

}  // namespace mrcnn::model

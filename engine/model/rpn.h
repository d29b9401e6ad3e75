// The region proposal network, torchvision's RegionProposalNetwork: the head's objectness
// and deltas on every anchor; per image the best pre_nms_top_n anchors of each level,
// decoded (BoxCoder weights 1, 1, 1, 1), clipped to the image, small and low-scoring boxes
// dropped, NMS within each level, the best post_nms_top_n kept. In training, anchors are
// matched to the ground truth (Matcher with low-quality matches), a balanced sample of them
// gives the objectness loss (BCE with logits, mean over the sample) and the box loss
// (smooth L1, beta 1/9, summed over the sampled positives and divided by the sample size).
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/model/anchor_generator.h"
#include "engine/model/matcher.h"
#include "engine/model/rpn_head.h"
#include "engine/model/sampler.h"

namespace mrcnn::model {

// Defaults are maskrcnn_resnet50_fpn's.
struct RPNOptions {
  int64_t pre_nms_top_n_train = 2000;  // per level and image
  int64_t pre_nms_top_n_test = 1000;
  int64_t post_nms_top_n_train = 2000;  // per image
  int64_t post_nms_top_n_test = 1000;
  double nms_thresh_train = 0.7;
  double nms_thresh_test = 0.7;
  double fg_iou_thresh = 0.7;  // anchors at or above: foreground
  double bg_iou_thresh = 0.3;  // anchors below: background
  int64_t batch_size_per_image = 256;
  double positive_fraction = 0.5;
  double score_thresh = 0.0;  // objectness probability; kept if >=
  double min_size = 1e-3;     // boxes with a side below this (pixels) are dropped
  double smooth_l1_beta = 1.0 / 9.0;
  double box_loss_weight = 1.0;  // the spec's rpn_box_loss_weight (torchvision has none)
};

// The spec's RPN fields (maskrcnn_config), as plain values: engine/model does not depend on
// the spec library; the engine fills this from the spec and calls toRPNOptions.
struct RPNSpecFields {
  uint32_t train_rpn_pre_nms_topn = 2000;
  uint32_t train_rpn_post_nms_topn = 1000;
  float train_rpn_nms_threshold = 0.7f;
  uint32_t test_rpn_pre_nms_topn = 1000;
  uint32_t test_rpn_post_nms_topn = 1000;
  float test_rpn_nms_thresh = 0.7f;
  float rpn_positive_overlap = 0.7f;
  float rpn_negative_overlap = 0.3f;
  uint32_t rpn_batch_size_per_im = 256;
  float rpn_fg_fraction = 0.5f;
  float rpn_min_size = 0.0f;
  float rpn_box_loss_weight = 1.0f;
};

// rpn_min_size 0 (the spec's default) becomes torchvision's 1e-3: a box of zero width or
// height (clipped entirely outside the image) is never a proposal.
RPNOptions toRPNOptions(const RPNSpecFields& spec);

// The batch's geometry: the padded tensor's (height, width) and each image's own size
// before padding (torchvision's ImageList.image_sizes).
struct ImageSizes {
  std::array<int64_t, 2> padded;
  std::vector<std::array<int64_t, 2>> images;
};

// Ground truth for training, per image: boxes [M_i, 4] xyxy float (M_i may be 0). Optionally
// the anchors' sample per image (uint8 masks over all anchors of the image) instead of
// drawing one: for parity with a sample made elsewhere.
struct RPNTargets {
  std::vector<at::Tensor> boxes;
  std::vector<SampledMasks> sampled;  // empty: the sampler draws
  std::vector<uint64_t> sample_keys;  // per image, optional: see MaskRCNNTargets
};

struct RPNLosses {
  at::Tensor objectness;    // torchvision's loss_objectness
  at::Tensor box;           // torchvision's loss_rpn_box_reg (unweighted)
  at::Tensor box_weighted;  // box * box_loss_weight: what training adds up
  double sampled = 0;       // anchors sampled: the denominator of both losses
};

struct RPNOutput {
  std::vector<at::Tensor> boxes;    // per image [K_i, 4], by decreasing score
  std::vector<at::Tensor> scores;   // per image [K_i], objectness probability
  std::optional<RPNLosses> losses;  // in training (targets given) and validate()
  // validate(): the proposals training would give (its top-n counts and NMS threshold), from
  // which the RoI heads' losses are computed; `boxes` are then inference's.
  std::vector<at::Tensor> training_boxes;
};

class RegionProposalNetworkImpl : public torch::nn::Module {
 public:
  // generator: the sampler's random source (see BalancedPositiveNegativeSampler).
  RegionProposalNetworkImpl(AnchorGenerator anchor_generator, RPNHead head, RPNOptions options,
                            std::optional<at::Generator> generator = std::nullopt);

  // features: one [N, C, H_l, W_l] per level, finest first. targets: required in training
  // (is_training()), ignored otherwise. head_maps: the head's outputs on `features` when the
  // caller ran it (MaskRCNN's dense stages); null: the head runs here.
  RPNOutput forward(const std::vector<at::Tensor>& features, const ImageSizes& sizes,
                    const RPNTargets* targets = nullptr, const RPNHeadMaps* head_maps = nullptr);

  // Validation, in either mode: one run of the head gives inference's proposals (`boxes`,
  // `scores`), training's (`training_boxes`) and the losses training computes against
  // `targets` (drawing its sample from targets.sample_keys when given).
  RPNOutput validate(const std::vector<at::Tensor>& features, const ImageSizes& sizes,
                     const RPNTargets& targets);

  const RPNOptions& options() const { return options_; }
  const AnchorGenerator& anchorGenerator() const { return anchor_generator_; }
  RPNHead& head() { return head_; }

  // The training labels of one image's anchors (1 foreground, 0 background, -1 ignored) and
  // each anchor's matched ground-truth box.
  std::pair<at::Tensor, at::Tensor> assignTargets(const at::Tensor& anchors,
                                                  const at::Tensor& gt_boxes) const;

 private:
  // The head's outputs on every anchor of the batch.
  struct HeadOutput {
    int64_t num_images = 0;
    std::vector<int64_t> per_level;  // anchors per level (and image)
    at::Tensor anchors;              // [T, 4], one image's
    at::Tensor objectness;           // [N*T, 1] logits
    at::Tensor pred_deltas;          // [N*T, 4]
    at::Tensor decoded;              // [N, T, 4] float, detached
  };
  HeadOutput runHead(const std::vector<at::Tensor>& features, const ImageSizes& sizes,
                     const RPNHeadMaps* head_maps = nullptr);
  // Per image the proposals with training's counts and NMS threshold or inference's. The
  // host waits once, for how many boxes each image keeps; `also` (device int64 scalars) are
  // read in the same copy, and returned.
  std::vector<int64_t> selectProposals(const HeadOutput& head, const ImageSizes& sizes,
                                       bool training_counts, std::vector<at::Tensor>& boxes,
                                       std::vector<at::Tensor>* scores,
                                       const std::vector<at::Tensor>& also = {}) const;
  // The anchors' labels and regression targets for the ground truth, and their sample (bool
  // masks), over the whole batch ([N*T], [N*T, 4]).
  struct AnchorSample {
    at::Tensor labels, regression_targets, positive, negative;
  };
  AnchorSample sampleAnchors(const HeadOutput& head, const RPNTargets& targets);
  // The losses of a sample with `positives` and `negatives` anchors (counted on the host).
  RPNLosses lossesOf(const HeadOutput& head, const AnchorSample& sample, int64_t positives,
                     int64_t negatives) const;

  AnchorGenerator anchor_generator_;
  RPNHead head_;
  RPNOptions options_;
  Matcher matcher_;
  BalancedPositiveNegativeSampler sampler_;
};

TORCH_MODULE(RegionProposalNetwork);

}  // namespace mrcnn::model

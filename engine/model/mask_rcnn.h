// Mask R-CNN, wired as torchvision's GeneralizedRCNN: backbone (ResNet + FPN) -> region
// proposal network -> RoI heads (boxes and masks). This file only assembles the stages and
// owns the model-wide state_dict; each stage lives in its own file.
//
// The data contract, written once here:
//  - input: a batch of images [N, 3, H, W] float, RGB, normalised with the ImageNet mean and
//    std, resized (keeping aspect ratio) and padded bottom/right with zeros; H and W multiples
//    of 2^max_level (fixed canvas) or of the size divisibility (shorter-side mode).
//    ImageSizes gives the padded size and each image's size before padding.
//  - ground truth per image: boxes float [M, 4] xyxy in the resized image's pixels, labels
//    int64 [M] in 1..num_classes-1 (0 is background), masks uint8 [M, h, w] 0/1 at the resized
//    image's size.
//  - output (inference): per image boxes float [K, 4] xyxy in the resized image's pixels,
//    scores [K], labels int64 [K], mask probabilities [K, 1, M, M] at the mask head's
//    resolution; postprocess.h maps them to the original image (boxes scaled, masks pasted).
//
// State_dict keys are torchvision's maskrcnn_resnet50_fpn keys (backbone.*, rpn.head.*,
// roi_heads.*), so its files load here and ours load in torchvision.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/activation_layout.h"
#include "engine/model/anchor_generator.h"
#include "engine/model/backbone.h"
#include "engine/model/conv_widths.h"
#include "engine/model/roi_heads.h"
#include "engine/model/rpn.h"
#include "engine/model/rpn_head.h"
#include "engine/model/state_dict.h"

namespace mrcnn::model {

struct MaskRCNNOptions {
  BackboneOptions backbone;
  AnchorOptions anchors;
  int64_t rpn_head_conv_depth = 1;
  RPNOptions rpn;
  RoIHeadsOptions roi_heads;
  // A pruned model's convolution widths (conv_widths.h), given to the backbone, the RPN head
  // and the mask head by the constructor; a name that is not prunable is refused there.
  ConvWidths conv_widths{};
  // NCHW as torchvision unless asked (the spec's memory_format; activation_layout.h).
  ActivationLayout layout = ActivationLayout::Nchw;

  // torchvision's maskrcnn_resnet50_fpn (v1): ResNet-50, FPN levels 2..6, frozen batch norm,
  // the stem and layer1 frozen (trainable_backbone_layers 3).
  static MaskRCNNOptions torchvisionResNet50FPN(int64_t num_classes = 91);
};

struct MaskRCNNTargets {
  std::vector<at::Tensor> boxes;
  std::vector<at::Tensor> labels;
  // Per image, with the mask head: either the whole masks, uint8 [M, H, W], or (masks empty)
  // each cropped to its pixels' window (the loader's, for images with many objects).
  std::vector<at::Tensor> masks;
  std::vector<CroppedMasks> mask_crops;
  // For parity with a sample drawn elsewhere (both empty: the samplers draw).
  std::vector<SampledMasks> rpn_sampled;
  std::vector<SampledMasks> roi_sampled;
  // Per image, optional: the seed of its samplers' draws (anchors, RoIs), so that an image
  // samples the same whichever batch and rank it is in (the trainer keys it by seed, epoch
  // and sample). Empty: the model's generator draws for the batch in order.
  std::vector<uint64_t> sample_keys;
};

// The targets' tensors (boxes, labels, whole or cropped masks) on `device`, in place.
void moveToDevice(MaskRCNNTargets& targets, const c10::Device& device);

// The five loss components (each unweighted, as torchvision names them) and the weighted
// total training minimises: objectness + rpn_box * rpn_box_loss_weight + classifier +
// box_reg * box_loss_weight + mask * mask_loss_weight.
struct MaskRCNNLosses {
  at::Tensor rpn_objectness;
  at::Tensor rpn_box;
  at::Tensor classifier;
  at::Tensor box_reg;
  at::Tensor mask;
  at::Tensor total;
  // Each component is a mean; these are its denominators (anchors sampled for both RPN
  // losses, RoIs sampled for the classifier and box regression, positive RoIs for the mask),
  // so that data-parallel ranks can normalise over the global batch.
  double rpn_sampled = 0;
  double roi_sampled = 0;
  double mask_positives = 0;
};

// validate(): the losses of a batch as training computes them, and its detections.
struct MaskRCNNValidation {
  MaskRCNNLosses losses;
  std::vector<Detections> detections;
};

// What the stages produced, for parity tests and debugging.
struct MaskRCNNTrace {
  std::vector<at::Tensor> features;   // FPN levels min_level..max_level
  std::vector<at::Tensor> proposals;  // per image
};

class MaskRCNNImpl : public torch::nn::Module {
 public:
  // generator: the random source of both samplers (see BalancedPositiveNegativeSampler).
  explicit MaskRCNNImpl(MaskRCNNOptions options = MaskRCNNOptions::torchvisionResNet50FPN(),
                        std::optional<at::Generator> generator = std::nullopt);

  // Training (is_training()): the losses of a batch.
  MaskRCNNLosses losses(const at::Tensor& images, const ImageSizes& sizes,
                        const MaskRCNNTargets& targets, MaskRCNNTrace* trace = nullptr);

  // Inference (!is_training()): detections per image, in the resized images' pixels.
  std::vector<Detections> detect(const at::Tensor& images, const ImageSizes& sizes,
                                 MaskRCNNTrace* trace = nullptr);

  // Validation (!is_training(), no gradients): from one run of the backbone, the losses
  // training would compute on the batch (training's proposal counts; the samplers draw from
  // targets.sample_keys when given, so a validation image samples alike at every evaluation)
  // and the detections detect() gives. Batch norms stay in evaluation mode.
  MaskRCNNValidation validate(const at::Tensor& images, const ImageSizes& sizes,
                              const MaskRCNNTargets& targets);

  // The dense stages of a training step: the backbone with its FPN, then the RPN head on every
  // level. Their shapes are the padded batch's, so a recording of them (CUDA graphs) replays
  // for every batch of one shape. One list: the FPN's levels, then the head's logits, then its
  // deltas (as many of each). `images` in options().layout.
  std::vector<at::Tensor> denseStages(const at::Tensor& images);
  // What runs denseStages in losses() and detect(): a runner set here (runtime/dense_graphs.h
  // records them), or, when none is set (an empty one), denseStages itself. Loading weights and
  // prepareForInference() drop the runner: a recording reads the weights it was made with.
  using DenseRunner = std::function<std::vector<at::Tensor>(const at::Tensor&)>;
  void setDenseRunner(DenseRunner runner) { dense_runner_ = std::move(runner); }

  BackboneWithFPN& backbone() { return backbone_; }
  RegionProposalNetwork& rpn() { return rpn_; }
  RoIHeads& roiHeads() { return roi_heads_; }
  const MaskRCNNOptions& options() const { return options_; }
  int64_t numClasses() const { return options_.roi_heads.num_classes; }

  // Loads a whole Mask R-CNN state_dict with torchvision's key names, old and new (frozen
  // batch norms are unfolded first; call prepareForInference() again afterwards). Strict by
  // default: missing and unexpected keys and shape mismatches are errors naming the key and
  // both shapes.
  LoadReport loadTorchvisionState(const StateDict& state, LoadOptions options);
  // The model's weights under torchvision's names: torchvision's load_state_dict accepts
  // them with no missing or unexpected keys.
  StateDict torchvisionState() const;
  // Every (old name, current name) pair torchvision has used, from the model's root.
  std::vector<std::pair<std::string, std::string>> legacyParameterNames() const;

  // Inference speed: puts the convolution weights in options().layout and folds the frozen batch
  // norms into their convolutions (undone by train(true) or by loading weights).
  void prepareForInference();

 private:
  RPNTargets rpnTargets(const MaskRCNNTargets& targets) const;
  RoIHeadsTargets roiTargets(const MaskRCNNTargets& targets) const;
  MaskRCNNLosses combine(const RPNLosses& rpn, const RoIHeadsLosses& heads) const;
  // Gives options_.conv_widths to the stages' options (the ResNet's widths, the mask head's
  // widths) and to rpn_head_widths_.
  void applyConvWidths();
  // The images in options_.layout, the convolution weights moved to it first where they are
  // not (once: the first step, or after weights were loaded in another layout).
  at::Tensor inLayout(const at::Tensor& images);

  MaskRCNNOptions options_;
  std::vector<int64_t> rpn_head_widths_;
  BackboneWithFPN backbone_{nullptr};
  RegionProposalNetwork rpn_{nullptr};
  RoIHeads roi_heads_{nullptr};
  DenseRunner dense_runner_;
};
TORCH_MODULE(MaskRCNN);

}  // namespace mrcnn::model

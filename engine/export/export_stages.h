// The stages of the exported graph, each written beside the LibTorch stage it mirrors:
//   export_transform.cpp   normalisation, resize and padding in; boxes back to the input's
//                          pixels and category ids out (dataset/loader/transform.h)
//   export_backbone.cpp    ResNet (batch norms folded into the convolutions) and FPN
//   export_rpn.cpp         the RPN head, anchors, top-k, decoding, NMS (model/rpn.cpp)
//   export_roi_heads.cpp   multi-scale RoIAlign, box head and post-processing, mask head
//   export_boxes.cpp       what several stages share: decoding, clipping, batched NMS
// Internal to engine/export; onnx_export.h is the interface.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>

#include <array>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dataset/loader/transform.h"
#include "engine/export/onnx_graph.h"
#include "engine/model/mask_rcnn.h"

namespace mrcnn::exporter {

// The model's modules by their full names ("backbone.body.layer1.0.conv1").
class ModuleIndex {
 public:
  explicit ModuleIndex(torch::nn::Module& model);
  bool has(const std::string& name) const { return modules_.count(name) > 0; }
  // The module if it is there and of that kind, else null.
  template <typename T>
  T* find(const std::string& name) const {
    const auto found = modules_.find(name);
    return found == modules_.end() ? nullptr : found->second->as<T>();
  }
  // Throws naming the module when it is missing or of another kind.
  template <typename T>
  T& get(const std::string& name) const {
    const auto found = modules_.find(name);
    if (found == modules_.end()) missing(name);
    T* m = found->second->as<T>();
    if (m == nullptr) wrongKind(name);
    return *m;
  }

 private:
  [[noreturn]] static void missing(const std::string& name);
  [[noreturn]] static void wrongKind(const std::string& name);
  std::map<std::string, std::shared_ptr<torch::nn::Module>> modules_;
};

// What the graph knows of the input image once it is resized and padded.
struct InputGeometry {
  Value batch;                            // [1, 3, H', W'] float, normalised, padded
  Value height, width;                    // the resized image's size before padding: int64 [1]
  Value padded_height, padded_width;      // int64 [1]
  Value original_height, original_width;  // the input image's size: int64 [1]
};

struct PreprocessOptions {
  dataset::ResizeSpec resize;
  int64_t pad_multiple = 32;
};

InputGeometry emitPreprocess(GraphBuilder& g, const Value& image, const PreprocessOptions& o);

// The FPN's maps, levels min_level..max_level, finest first.
std::vector<Value> emitBackbone(GraphBuilder& g, const ModuleIndex& modules,
                                const model::BackboneOptions& options, const Value& batch);

// The proposals [P, 4] (xyxy in the resized image's pixels).
Value emitProposals(GraphBuilder& g, const ModuleIndex& modules,
                    model::RegionProposalNetworkImpl& rpn, const std::vector<Value>& features,
                    const InputGeometry& input);

struct DetectionValues {
  Value boxes;   // [D, 4] float, xyxy in the resized image's pixels
  Value scores;  // [D] float
  Value labels;  // [D] int64, contiguous labels 1..num_classes-1
  Value masks;   // [D, 1, M, M] float probabilities ("" without a mask head)
};

DetectionValues emitRoIHeads(GraphBuilder& g, const ModuleIndex& modules,
                             const model::RoIHeadsOptions& options,
                             const std::vector<Value>& features, const Value& proposals,
                             const InputGeometry& input);

// Boxes [D, 4] from the resized image's pixels to the input image's (torchvision's
// resize_boxes: float32 ratios per axis).
Value emitBoxesToInput(GraphBuilder& g, const Value& boxes, const InputGeometry& input);

// ---- Shared by the stages (export_boxes.cpp) ----

// torchvision's BoxCoder.decode: deltas [..., 4] (dx, dy, dw, dh) applied to reference boxes
// [..., 4] (broadcast), divided by the weights, dw and dh clamped to log(1000 / 16).
Value emitDecode(GraphBuilder& g, const Value& reference, const Value& deltas,
                 const std::array<float, 4>& weights);
// Boxes [..., 4] clipped to [0, width] x [0, height] (int64 [1] sizes).
Value emitClip(GraphBuilder& g, const Value& boxes, const Value& height, const Value& width);
// Widths and heights of boxes [N, 4]: [N] each.
std::pair<Value, Value> emitSides(GraphBuilder& g, const Value& boxes);
// torchvision's batched_nms (by the coordinate offset of each group): the indices kept, by
// decreasing score, at most `limit`. boxes [N, 4], scores [N], groups [N] float.
Value emitBatchedNms(GraphBuilder& g, const Value& boxes, const Value& scores, const Value& groups,
                     double iou_threshold, int64_t limit);
// torchvision's MultiScaleRoIAlign (aligned=false) of boxes [R, 4] over `maps` (levels
// first_level.. of stride 2^level): [R, C, size, size].
Value emitMultiScaleRoIAlign(GraphBuilder& g, const std::vector<Value>& maps, int first_level,
                             const Value& boxes, int64_t channels, int64_t size,
                             int64_t sampling_ratio, int64_t canonical_scale,
                             int64_t canonical_level);

// A convolution with its weights (and a folded batch norm where given) as initializers.
struct ConvWeights {
  at::Tensor weight, bias;  // bias may be undefined
  std::vector<int64_t> strides, pads, dilations;
  int64_t groups = 1;
};
Value emitConv(GraphBuilder& g, const std::string& name, const Value& x, const ConvWeights& w);
// The same in two steps, for a convolution applied more than once (its weights written once).
struct ConvNode {
  Value weight, bias;  // bias "" when none
  ConvWeights shape;   // the attributes (its tensors are not used again)
};
ConvNode convNode(GraphBuilder& g, const std::string& name, const ConvWeights& w);
Value emitConv(GraphBuilder& g, const Value& x, const ConvNode& conv);
ConvWeights convWeights(const torch::nn::Conv2dImpl& conv);

}  // namespace mrcnn::exporter

// The exported RoI heads, as model/roi_heads.cpp runs them in inference: RoIAlign of the
// proposals, the box head, per-class decoding, score threshold, small boxes dropped, NMS per
// class, detections_per_image kept; then RoIAlign of the detections, the mask head, and each
// detection's mask probabilities for its own class.
#include <ATen/ATen.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <algorithm>

#include "engine/export/export_stages.h"
#include "engine/ops/nms.h"

namespace mrcnn::exporter {
namespace {

Value linear(GraphBuilder& g, const ModuleIndex& modules, const std::string& module,
             const std::string& name, const Value& x) {
  const auto& fc = modules.get<torch::nn::LinearImpl>(module);
  return g.op("Gemm",
              {x, g.weight(name + ".weight", fc.weight.to(at::kFloat)),
               g.weight(name + ".bias", fc.bias.to(at::kFloat))},
              {{"transB", 1}});
}

// The maps RoIAlign pools: levels min_level..min(max_level, 5) (torchvision's '0'..'3').
std::vector<Value> pooledMaps(const std::vector<Value>& features, const model::RoIHeadsOptions& o) {
  const size_t n = static_cast<size_t>(std::min(o.max_level, 5) - o.min_level + 1);
  return {features.begin(), features.begin() + static_cast<std::ptrdiff_t>(n)};
}

Value masksFor(GraphBuilder& g, const ModuleIndex& modules, const model::RoIHeadsOptions& o,
               const std::vector<Value>& maps, int64_t channels, const Value& boxes,
               const Value& labels) {
  g.setScope("roi_heads/mask");
  Value x = emitMultiScaleRoIAlign(g, maps, o.min_level, boxes, channels, o.mask_roi_size,
                                   o.sampling_ratio, o.canonical_scale, o.canonical_level);
  for (int i = 0; modules.has("roi_heads.mask_head." + std::to_string(i) + ".0"); ++i) {
    const std::string name = "mask_head." + std::to_string(i) + ".0";
    x = g.op("Relu",
             {emitConv(g, name, x,
                       convWeights(modules.get<torch::nn::Conv2dImpl>("roi_heads." + name)))});
  }
  const auto& up =
      modules.get<torch::nn::ConvTranspose2dImpl>("roi_heads.mask_predictor.conv5_mask");
  x = g.op("Relu",
           {g.op("ConvTranspose",
                 {x, g.weight("conv5_mask.weight", up.weight.to(at::kFloat)),
                  g.weight("conv5_mask.bias", up.bias.to(at::kFloat))},
                 {{"kernel_shape", std::vector<int64_t>{up.weight.size(2), up.weight.size(3)}},
                  {"strides", std::vector<int64_t>{up.options.stride()->at(0),
                                                   up.options.stride()->at(1)}}})});
  const Value logits = emitConv(
      g, "mask_fcn_logits", x,
      convWeights(modules.get<torch::nn::Conv2dImpl>("roi_heads.mask_predictor.mask_fcn_logits")));
  // [D, C, M, M] -> the channel of each detection's label: [D, 1, M, M].
  const Value probabilities = g.op("Sigmoid", {logits});
  const Value shape = g.op(
      "Concat", {g.dim(logits, 0), g.ints({1}), g.dim(logits, 2), g.dim(logits, 3)}, {{"axis", 0}});
  const Value index = g.op("Expand", {g.reshape(labels, {-1, 1, 1, 1}), shape});
  return g.op("GatherElements", {probabilities, index}, {{"axis", 1}});
}

}  // namespace

DetectionValues emitRoIHeads(GraphBuilder& g, const ModuleIndex& modules,
                             const model::RoIHeadsOptions& o, const std::vector<Value>& features,
                             const Value& proposals, const InputGeometry& input) {
  const std::vector<Value> maps = pooledMaps(features, o);
  const int64_t channels =
      modules.get<torch::nn::LinearImpl>("roi_heads.box_head.fc6").weight.size(1) /
      (o.box_roi_size * o.box_roi_size);

  g.setScope("roi_heads/box");
  const Value pooled =
      emitMultiScaleRoIAlign(g, maps, o.min_level, proposals, channels, o.box_roi_size,
                             o.sampling_ratio, o.canonical_scale, o.canonical_level);
  Value x = g.op("Flatten", {pooled}, {{"axis", 1}});
  x = g.op("Relu", {linear(g, modules, "roi_heads.box_head.fc6", "fc6", x)});
  x = g.op("Relu", {linear(g, modules, "roi_heads.box_head.fc7", "fc7", x)});
  const Value class_logits =
      linear(g, modules, "roi_heads.box_predictor.cls_score", "cls_score", x);
  const Value regression = linear(g, modules, "roi_heads.box_predictor.bbox_pred", "bbox_pred", x);
  const int64_t num_classes =
      modules.get<torch::nn::LinearImpl>("roi_heads.box_predictor.cls_score").weight.size(0);

  g.setScope("roi_heads/detections");
  const auto& w = o.bbox_reg_weights;
  const Value decoded =
      emitDecode(g, g.unsqueeze(proposals, {1}), g.reshape(regression, {0, num_classes, 4}),
                 {static_cast<float>(w[0]), static_cast<float>(w[1]), static_cast<float>(w[2]),
                  static_cast<float>(w[3])});
  // Every class prediction but the background's is a candidate of its own.
  const auto without_background = [&](const Value& v) {
    return g.op("Slice", {v, g.ints({1}), g.ints({num_classes}), g.ints({1})});
  };
  Value boxes =
      g.reshape(without_background(emitClip(g, decoded, input.height, input.width)), {-1, 4});
  const Value probabilities = g.op("Softmax", {class_logits}, {{"axis", -1}});
  Value scores = g.reshape(without_background(probabilities), {-1});
  // NMS by probability, near-certain ones by their logit against the other classes,
  // l_c - logsumexp_{j != c} l_j (for the most likely class; at most 0 for the others), as the
  // engine's box head (ops::kNmsCertainLogit).
  const Value classes = g.op("Range", {g.int64Scalar(0), g.int64Scalar(num_classes), g.int64Scalar(1)});
  const Value best = g.op("ArgMax", {class_logits}, {{"axis", -1}, {"keepdims", 1}});
  const Value rest = g.op("Where", {g.op("Equal", {g.unsqueeze(classes, {0}), best}),
                                    g.floatScalar(-1e30f), class_logits});
  const Value rest_max = g.op("ReduceMax", {rest}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", 1}});
  const Value rest_lse = g.op(
      "Add", {rest_max, g.op("Log", {g.op("ReduceSum", {g.op("Exp", {g.op("Sub", {rest, rest_max})}),
                                                         g.ints({-1})},
                                           {{"keepdims", 1}})})});
  const Value certain = g.op("Sub", {class_logits, rest_lse});
  Value keys = g.reshape(
      without_background(g.op(
          "Where", {g.op("GreaterOrEqual", {certain, g.floatScalar(ops::kNmsCertainLogit)}),
                    certain, probabilities})),
      {-1});
  const Value class_ids = g.unsqueeze(
      g.op("Range", {g.int64Scalar(1), g.int64Scalar(num_classes), g.int64Scalar(1)}), {0});
  Value labels = g.reshape(
      g.op("Expand", {class_ids, g.op("Concat", {g.dim(proposals, 0), g.ints({num_classes - 1})},
                                      {{"axis", 0}})}),
      {-1});
  const auto keep = [&](const Value& rows) {
    boxes = g.op("Gather", {boxes, rows}, {{"axis", 0}});
    scores = g.op("Gather", {scores, rows}, {{"axis", 0}});
    keys = g.op("Gather", {keys, rows}, {{"axis", 0}});
    labels = g.op("Gather", {labels, rows}, {{"axis", 0}});
  };
  keep(g.where(g.op("Greater", {scores, g.floatScalar(static_cast<float>(o.score_thresh))})));
  // torchvision's remove_small_boxes with min_size 1e-2.
  const auto [bw, bh] = emitSides(g, boxes);
  const Value min_size = g.floatScalar(1e-2f);
  keep(g.where(g.op(
      "And", {g.op("GreaterOrEqual", {bw, min_size}), g.op("GreaterOrEqual", {bh, min_size})})));
  keep(emitBatchedNms(g, boxes, keys,
                      g.op("Cast", {labels}, {{"to", static_cast<int64_t>(Element::kFloat)}}),
                      o.nms_thresh, o.detections_per_image));

  DetectionValues out{boxes, scores, labels, ""};
  if (o.with_masks) out.masks = masksFor(g, modules, o, maps, channels, boxes, labels);
  return out;
}

}  // namespace mrcnn::exporter

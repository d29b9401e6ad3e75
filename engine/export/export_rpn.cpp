// The exported RPN, as model/rpn.cpp runs it in inference: the head on every level, the
// anchors of the level's grid, the pre_nms_top_n best anchors of each level decoded, clipped
// to the image, small boxes and low scores dropped, NMS per level, post_nms_top_n kept.
#include <ATen/ATen.h>
#include <torch/nn/modules/conv.h>

#include <cmath>

#include "engine/export/export_stages.h"
#include "engine/ops/nms.h"

namespace mrcnn::exporter {
namespace {

constexpr auto kInt64 = static_cast<int64_t>(Element::kInt64);
constexpr auto kFloat = static_cast<int64_t>(Element::kFloat);
constexpr auto kDouble = static_cast<int64_t>(Element::kDouble);

// The anchors of one level, [H * W * A, 4] float, in model/anchor_generator.cpp's order (cell
// major, cell anchor minor) and arithmetic.
Value levelAnchors(GraphBuilder& g, const model::AnchorGenerator& generator, size_t level,
                   const Value& feature, const InputGeometry& input) {
  const model::AnchorOptions& o = generator.options();
  const bool tao = o.mode == model::AnchorOptions::Mode::Tao;
  const Value gh = g.dim(feature, 2), gw = g.dim(feature, 3);
  const auto range = [&](const Value& n, int64_t type) {
    const Value r = g.op("Range", {g.int64Scalar(0), g.scalar(n), g.int64Scalar(1)});
    return type == kInt64 ? r : g.op("Cast", {r}, {{"to", type}});
  };
  Value sx, sy;
  if (tao) {
    // Centres at (cell + 0.5) * 2^level, in double, rounded once to float with the cell anchor.
    const double stride =
        std::ldexp(1.0, static_cast<int>(o.min_level + static_cast<int64_t>(level)));
    const Value half = g.doubleScalar(0.5), step = g.doubleScalar(stride);
    sx = g.op("Mul", {g.op("Add", {range(gw, kDouble), half}), step});
    sy = g.op("Mul", {g.op("Add", {range(gh, kDouble), half}), step});
  } else {
    // torchvision: integer strides, padded size // grid size.
    sx = g.op("Mul", {range(gw, kInt64), g.op("Div", {input.padded_width, gw})});
    sy = g.op("Mul", {range(gh, kInt64), g.op("Div", {input.padded_height, gh})});
  }
  const Value grid = g.op("Concat", {gh, gw}, {{"axis", 0}});
  const Value x = g.reshape(g.op("Expand", {g.unsqueeze(sx, {0}), grid}), {-1, 1});
  const Value y = g.reshape(g.op("Expand", {g.unsqueeze(sy, {1}), grid}), {-1, 1});
  Value shifts = g.op("Concat", {x, y, x, y}, {{"axis", 1}});  // [H * W, 4]
  const at::Tensor cell = generator.cellAnchors(static_cast<int64_t>(level));
  Value cell_value;
  if (tao) {
    cell_value = g.weight("anchors." + std::to_string(level), cell.to(at::kDouble).unsqueeze(0));
  } else {
    shifts = g.op("Cast", {shifts}, {{"to", kFloat}});
    cell_value = g.weight("anchors." + std::to_string(level), cell.to(at::kFloat).unsqueeze(0));
  }
  Value anchors = g.reshape(g.op("Add", {g.unsqueeze(shifts, {1}), cell_value}), {-1, 4});
  if (tao) anchors = g.op("Cast", {anchors}, {{"to", kFloat}});
  return anchors;
}

}  // namespace

Value emitProposals(GraphBuilder& g, const ModuleIndex& modules,
                    model::RegionProposalNetworkImpl& rpn, const std::vector<Value>& features,
                    const InputGeometry& input) {
  const model::RPNOptions& o = rpn.options();
  const model::AnchorGenerator& generator = rpn.anchorGenerator();
  const int64_t num_anchors = rpn.head()->options().num_anchors;
  // The head, shared by the levels: its weights written once.
  g.setScope("rpn/head");
  const std::string head = "rpn.head.";
  const auto node = [&](const std::string& name) {
    return convNode(g, name, convWeights(modules.get<torch::nn::Conv2dImpl>(head + name)));
  };
  std::vector<ConvNode> convs;
  for (int64_t i = 0; modules.has(head + "conv." + std::to_string(i) + ".0"); ++i)
    convs.push_back(node("conv." + std::to_string(i) + ".0"));
  const ConvNode cls_logits = node("cls_logits"), bbox_pred = node("bbox_pred");

  std::vector<Value> boxes, scores, top_logits, levels;
  for (size_t l = 0; l < features.size(); ++l) {
    g.setScope("rpn/level" + std::to_string(l));
    Value t = features[l];
    for (const ConvNode& conv : convs)
      t = g.op("Relu", {emitConv(g, t, conv)});
    const Value logits = emitConv(g, t, cls_logits);
    const Value deltas = emitConv(g, t, bbox_pred);
    // [1, A, H, W] -> [H * W * A]; [1, A * 4, H, W] -> [H * W * A, 4].
    const Value objectness =
        g.reshape(g.op("Transpose", {logits}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}), {-1});
    const Value level_deltas =
        g.reshape(g.op("Transpose", {g.reshape(deltas, {1, num_anchors, 4, -1})},
                       {{"perm", std::vector<int64_t>{0, 3, 1, 2}}}),
                  {-1, 4});
    const Value anchors = levelAnchors(g, generator, l, features[l], input);

    // The level's best pre_nms_top_n anchors (all of them when it has fewer).
    const Value count = g.unsqueeze(g.op("Size", {objectness}), {0});
    const Value k = g.op("Min", {count, g.ints({o.pre_nms_top_n_test})});
    const std::vector<Value> top =
        g.node("TopK", {objectness, k}, 2, {{"axis", 0}, {"largest", 1}, {"sorted", 1}});
    const Value picked_deltas = g.op("Gather", {level_deltas, top[1]}, {{"axis", 0}});
    const Value picked_anchors = g.op("Gather", {anchors, top[1]}, {{"axis", 0}});
    boxes.push_back(emitDecode(g, picked_anchors, picked_deltas, {1.0f, 1.0f, 1.0f, 1.0f}));
    scores.push_back(g.op("Sigmoid", {top[0]}));
    top_logits.push_back(top[0]);
    levels.push_back(g.op("ConstantOfShape", {g.op("Shape", {top[0]})},
                          {{"value", at::full({1}, static_cast<float>(l))}}));
  }

  g.setScope("rpn/proposals");
  Value b = emitClip(g, g.op("Concat", boxes, {{"axis", 0}}), input.height, input.width);
  Value s = g.op("Concat", scores, {{"axis", 0}});
  // NMS by probability, near-certain ones by logit, as the engine's RPN
  // (ops::kNmsCertainLogit).
  const Value l = g.op("Concat", top_logits, {{"axis", 0}});
  Value key =
      g.op("Where", {g.op("GreaterOrEqual", {l, g.floatScalar(ops::kNmsCertainLogit)}), l, s});
  Value v = g.op("Concat", levels, {{"axis", 0}});
  const auto [w, h] = emitSides(g, b);
  const Value min_size = g.floatScalar(static_cast<float>(o.min_size));
  const Value keep = g.where(g.op(
      "And",
      {g.op("And", {g.op("GreaterOrEqual", {w, min_size}), g.op("GreaterOrEqual", {h, min_size})}),
       g.op("GreaterOrEqual", {s, g.floatScalar(static_cast<float>(o.score_thresh))})}));
  b = g.op("Gather", {b, keep}, {{"axis", 0}});
  key = g.op("Gather", {key, keep}, {{"axis", 0}});
  v = g.op("Gather", {v, keep}, {{"axis", 0}});
  const Value kept = emitBatchedNms(g, b, key, v, o.nms_thresh_test, o.post_nms_top_n_test);
  return g.op("Gather", {b, kept}, {{"axis", 0}});
}

}  // namespace mrcnn::exporter

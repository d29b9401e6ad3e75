// Box arithmetic shared by the exported RPN and RoI heads, as engine/ops computes it.
#include <ATen/ATen.h>
#include <torch/nn/modules/conv.h>

#include <cmath>

#include "engine/export/export_stages.h"
#include "engine/model/multiscale_roi_align.h"
#include "engine/ops/box_coder.h"

namespace mrcnn::exporter {

Value emitDecode(GraphBuilder& g, const Value& reference, const Value& deltas,
                 const std::array<float, 4>& weights) {
  const Value x1 = g.pick(reference, 0, -1), y1 = g.pick(reference, 1, -1);
  const Value x2 = g.pick(reference, 2, -1), y2 = g.pick(reference, 3, -1);
  const Value half = g.floatScalar(0.5f);
  const Value w = g.op("Sub", {x2, x1}), h = g.op("Sub", {y2, y1});
  const Value cx = g.op("Add", {x1, g.op("Mul", {half, w})});
  const Value cy = g.op("Add", {y1, g.op("Mul", {half, h})});
  const Value clip = g.floatScalar(static_cast<float>(ops::kDefaultBoxXformClip));
  const auto delta = [&](int64_t k) {
    return g.op("Div", {g.pick(deltas, k, -1), g.floatScalar(weights[static_cast<size_t>(k)])});
  };
  const Value dw = g.op("Min", {delta(2), clip}), dh = g.op("Min", {delta(3), clip});
  const Value pcx = g.op("Add", {g.op("Mul", {delta(0), w}), cx});
  const Value pcy = g.op("Add", {g.op("Mul", {delta(1), h}), cy});
  const Value hw = g.op("Mul", {half, g.op("Mul", {g.op("Exp", {dw}), w})});
  const Value hh = g.op("Mul", {half, g.op("Mul", {g.op("Exp", {dh}), h})});
  return g.op(
      "Concat",
      {g.unsqueeze(g.op("Sub", {pcx, hw}), {-1}), g.unsqueeze(g.op("Sub", {pcy, hh}), {-1}),
       g.unsqueeze(g.op("Add", {pcx, hw}), {-1}), g.unsqueeze(g.op("Add", {pcy, hh}), {-1})},
      {{"axis", -1}});
}

Value emitClip(GraphBuilder& g, const Value& boxes, const Value& height, const Value& width) {
  const Value zero = g.floatScalar(0.0f);
  const auto size = [&](const Value& v) {
    return g.scalar(g.op("Cast", {v}, {{"to", static_cast<int64_t>(Element::kFloat)}}));
  };
  const Value x = g.op("Clip", {g.take(boxes, {0, 2}, -1), zero, size(width)});
  const Value y = g.op("Clip", {g.take(boxes, {1, 3}, -1), zero, size(height)});
  // (x1, x2) and (y1, y2) back to x1, y1, x2, y2.
  const Value pairs = g.op("Concat", {g.unsqueeze(x, {-1}), g.unsqueeze(y, {-1})}, {{"axis", -1}});
  return g.op("Reshape", {pairs, g.op("Shape", {boxes})});
}

std::pair<Value, Value> emitSides(GraphBuilder& g, const Value& boxes) {
  return {g.op("Sub", {g.pick(boxes, 2, 1), g.pick(boxes, 0, 1)}),
          g.op("Sub", {g.pick(boxes, 3, 1), g.pick(boxes, 1, 1)})};
}

Value emitBatchedNms(GraphBuilder& g, const Value& boxes, const Value& scores, const Value& groups,
                     double iou_threshold, int64_t limit) {
  // Each group moved beyond every other by (largest coordinate + 1) times its number: boxes
  // of different groups never overlap. The 0 appended keeps ReduceMax defined when no box is
  // left (the coordinates are clipped to >= 0).
  const Value flat = g.op("Concat", {g.reshape(boxes, {-1}), g.floats({0.0f})}, {{"axis", 0}});
  const Value largest = g.op("ReduceMax", {flat}, {{"keepdims", 0}});
  const Value offsets = g.op("Mul", {groups, g.op("Add", {largest, g.floatScalar(1.0f)})});
  const Value moved = g.op("Add", {boxes, g.unsqueeze(offsets, {1})});
  const Value selected =
      g.op("NonMaxSuppression", {g.unsqueeze(moved, {0}), g.reshape(scores, {1, 1, -1}),
                                 g.ints({limit}), g.floats({static_cast<float>(iou_threshold)})});
  return g.pick(selected, 2, 1);  // [S] box indices, by decreasing score
}

Value emitMultiScaleRoIAlign(GraphBuilder& g, const std::vector<Value>& maps, int first_level,
                             const Value& boxes, int64_t channels, int64_t size,
                             int64_t sampling_ratio, int64_t canonical_scale,
                             int64_t canonical_level) {
  const auto align = [&](const Value& map, int level, const Value& rois) {
    const Value batch_index =
        g.op("ConstantOfShape", {g.dim(rois, 0)},
             {{"value", at::zeros({1}, at::TensorOptions().dtype(at::kLong))}});
    return g.op("RoiAlign", {map, rois, batch_index},
                {{"mode", "avg"},
                 {"output_height", size},
                 {"output_width", size},
                 {"sampling_ratio", sampling_ratio},
                 {"spatial_scale", static_cast<float>(std::ldexp(1.0, -level))},
                 {"coordinate_transformation_mode", "output_half_pixel"}});
  };
  if (maps.size() == 1) return align(maps.front(), first_level, boxes);

  // torchvision's LevelMapper: floor(k0 + log2(sqrt(area) / s0) + eps), clamped.
  const auto [w, h] = emitSides(g, boxes);
  const Value s = g.op("Sqrt", {g.op("Mul", {w, h})});
  const Value log2 = g.op(
      "Div", {g.op("Log", {g.op("Div", {s, g.floatScalar(static_cast<float>(canonical_scale))})}),
              g.floatScalar(static_cast<float>(std::log(2.0)))});
  const Value k = g.op(
      "Floor",
      {g.op("Add", {g.op("Add", {log2, g.floatScalar(static_cast<float>(canonical_level))}),
                    g.floatScalar(static_cast<float>(model::MultiScaleRoIAlign::kLevelEps))})});
  const int last_level = first_level + static_cast<int>(maps.size()) - 1;
  const Value level = g.op("Cast",
                           {g.op("Clip", {k, g.floatScalar(static_cast<float>(first_level)),
                                          g.floatScalar(static_cast<float>(last_level))})},
                           {{"to", static_cast<int64_t>(Element::kInt64)}});

  // Every box has one level: the pooled features of each level scattered into their rows.
  Value result =
      g.op("ConstantOfShape",
           {g.op("Concat", {g.dim(boxes, 0), g.ints({channels, size, size})}, {{"axis", 0}})},
           {{"value", at::zeros({1}, at::TensorOptions().dtype(at::kFloat))}});
  for (size_t l = 0; l < maps.size(); ++l) {
    const int lv = first_level + static_cast<int>(l);
    const Value rows = g.where(g.op("Equal", {level, g.int64Scalar(lv)}));
    const Value pooled = align(maps[l], lv, g.op("Gather", {boxes, rows}, {{"axis", 0}}));
    result = g.op("ScatterND", {result, g.unsqueeze(rows, {1}), pooled});
  }
  return result;
}

ConvWeights convWeights(const torch::nn::Conv2dImpl& conv) {
  ConvWeights w;
  w.weight = conv.weight;
  w.bias = conv.options.bias() ? conv.bias : at::Tensor();
  const auto& o = conv.options;
  w.strides = {o.stride()->at(0), o.stride()->at(1)};
  const auto* pad = std::get_if<torch::ExpandingArray<2>>(&o.padding());
  TORCH_CHECK(pad != nullptr, "ONNX export: a convolution with 'same' or 'valid' padding");
  w.pads = {(*pad)->at(0), (*pad)->at(1), (*pad)->at(0), (*pad)->at(1)};
  w.dilations = {o.dilation()->at(0), o.dilation()->at(1)};
  w.groups = o.groups();
  return w;
}

ConvNode convNode(GraphBuilder& g, const std::string& name, const ConvWeights& w) {
  ConvNode node;
  node.weight = g.weight(name + ".weight", w.weight.to(at::kFloat));
  if (w.bias.defined()) node.bias = g.weight(name + ".bias", w.bias.to(at::kFloat));
  node.shape = w;
  return node;
}

Value emitConv(GraphBuilder& g, const Value& x, const ConvNode& conv) {
  std::vector<Value> inputs{x, conv.weight};
  if (!conv.bias.empty()) inputs.push_back(conv.bias);
  const ConvWeights& w = conv.shape;
  return g.op("Conv", inputs,
              {{"kernel_shape", std::vector<int64_t>{w.weight.size(2), w.weight.size(3)}},
               {"strides", w.strides},
               {"pads", w.pads},
               {"dilations", w.dilations},
               {"group", w.groups}});
}

Value emitConv(GraphBuilder& g, const std::string& name, const Value& x, const ConvWeights& w) {
  return emitConv(g, x, convNode(g, name, w));
}

}  // namespace mrcnn::exporter

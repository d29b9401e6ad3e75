// The exported model's input and output transforms, as the engine's image input computes them
// (dataset/loader/transform.h): normalisation with the ImageNet statistics, the spec's resize
// (bilinear, half-pixel centres, no antialiasing), zero padding bottom and right; at the end
// boxes scaled back to the input image's pixels.
#include <ATen/ATen.h>

#include "engine/export/export_stages.h"

namespace mrcnn::exporter {
namespace {

constexpr auto kInt64 = static_cast<int64_t>(Element::kInt64);
constexpr auto kFloat = static_cast<int64_t>(Element::kFloat);
constexpr auto kDouble = static_cast<int64_t>(Element::kDouble);

// The resized size (int64 [1] each), as dataset::resizedSize.
std::pair<Value, Value> resizedSize(GraphBuilder& g, const Value& h, const Value& w,
                                    const dataset::ResizeSpec& r) {
  Value out_h, out_w;
  if (r.mode == dataset::ResizeMode::kFixed) {
    // The limiting side becomes the canvas side, the other floor(side * canvas / limiting),
    // in integers.
    const Value ch = g.ints({r.canvas_height}), cw = g.ints({r.canvas_width});
    const Value height_limits = g.op("LessOrEqual", {g.op("Mul", {ch, w}), g.op("Mul", {cw, h})});
    out_h = g.op("Where", {height_limits, ch, g.op("Div", {g.op("Mul", {h, cw}), w})});
    out_w = g.op("Where", {height_limits, g.op("Div", {g.op("Mul", {w, ch}), h}), cw});
  } else {
    // scale = min(min_size / shorter, max_size / longer), floor(side * scale), in double.
    const Value hd = g.op("Cast", {h}, {{"to", kDouble}});
    const Value wd = g.op("Cast", {w}, {{"to", kDouble}});
    const Value scale =
        g.op("Min", {g.op("Div", {g.doubleScalar(r.min_size), g.op("Min", {hd, wd})}),
                     g.op("Div", {g.doubleScalar(r.max_size), g.op("Max", {hd, wd})})});
    const auto side = [&](const Value& v) {
      return g.op("Cast", {g.op("Floor", {g.op("Mul", {v, scale})})}, {{"to", kInt64}});
    };
    out_h = side(hd);
    out_w = side(wd);
  }
  const Value one = g.ints({1});
  return {g.op("Max", {out_h, one}), g.op("Max", {out_w, one})};
}

Value roundUp(GraphBuilder& g, const Value& v, int64_t multiple) {
  const Value m = g.ints({multiple});
  return g.op("Mul", {g.op("Div", {g.op("Add", {v, g.ints({multiple - 1})}), m}), m});
}

}  // namespace

InputGeometry emitPreprocess(GraphBuilder& g, const Value& image, const PreprocessOptions& o) {
  g.setScope("transform");
  InputGeometry in;
  in.original_height = g.dim(image, 1);
  in.original_width = g.dim(image, 2);
  const auto& mean = dataset::kImageNetMean;
  const auto& std = dataset::kImageNetStd;
  const Value normalised =
      g.op("Div", {g.op("Sub", {image, g.floats({mean[0], mean[1], mean[2]}, {3, 1, 1})}),
                   g.floats({std[0], std[1], std[2]}, {3, 1, 1})});
  std::tie(in.height, in.width) = resizedSize(g, in.original_height, in.original_width, o.resize);
  const Value resized =
      g.op("Resize",
           {g.unsqueeze(normalised, {0}), "", "",
            g.op("Concat", {g.ints({1, 3}), in.height, in.width}, {{"axis", 0}})},
           {{"mode", "linear"}, {"coordinate_transformation_mode", "half_pixel"}});
  if (o.resize.mode == dataset::ResizeMode::kFixed) {
    // The whole canvas, as training pads.
    in.padded_height =
        g.ints({dataset::roundUp(o.resize.canvas_height, static_cast<int>(o.pad_multiple))});
    in.padded_width =
        g.ints({dataset::roundUp(o.resize.canvas_width, static_cast<int>(o.pad_multiple))});
  } else {
    in.padded_height = roundUp(g, in.height, o.pad_multiple);
    in.padded_width = roundUp(g, in.width, o.pad_multiple);
  }
  const Value pads = g.op("Concat",
                          {g.ints({0, 0, 0, 0, 0, 0}), g.op("Sub", {in.padded_height, in.height}),
                           g.op("Sub", {in.padded_width, in.width})},
                          {{"axis", 0}});
  in.batch = g.op("Pad", {resized, pads, g.floatScalar(0.0f)}, {{"mode", "constant"}});
  return in;
}

Value emitBoxesToInput(GraphBuilder& g, const Value& boxes, const InputGeometry& input) {
  g.setScope("outputs");
  const auto ratio = [&](const Value& to, const Value& from) {
    return g.op("Div",
                {g.op("Cast", {to}, {{"to", kFloat}}), g.op("Cast", {from}, {{"to", kFloat}})});
  };
  const Value rh = ratio(input.original_height, input.height);
  const Value rw = ratio(input.original_width, input.width);
  return g.op("Mul", {boxes, g.op("Concat", {rw, rh, rw, rh}, {{"axis", 0}})});
}

}  // namespace mrcnn::exporter

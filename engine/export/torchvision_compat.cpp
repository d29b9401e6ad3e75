#include "engine/export/torchvision_compat.h"

#include <ATen/ATen.h>

#include <map>
#include <sstream>

namespace mrcnn::exporter {
namespace {

std::map<std::string, std::vector<int64_t>> shapes(const model::StateDict& state) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& [name, tensor] : state) {
    if (name.ends_with(".num_batches_tracked")) continue;
    out[name] = tensor.sizes().vec();
  }
  return out;
}

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

TorchvisionCompat torchvisionCompat(model::MaskRCNNImpl& model, const dataset::ResizeSpec& resize) {
  TorchvisionCompat out;
  const int64_t classes = model.numClasses();
  const model::StateDict ours = model.torchvisionState();
  model::MaskRCNNOptions reference_options =
      model::MaskRCNNOptions::torchvisionResNet50FPN(classes);
  reference_options.backbone.resnet.frozen_bn = model.options().backbone.resnet.frozen_bn;
  const model::MaskRCNN reference(reference_options);
  const auto expected = shapes(reference->torchvisionState());
  const auto have = shapes(ours);
  if (expected != have) {
    std::string first;
    for (const auto& [name, shape] : expected) {
      const auto found = have.find(name);
      if (found == have.end() || found->second != shape) {
        first = name;
        break;
      }
    }
    out.note = "no model.pth: the model is not torchvision's maskrcnn_resnet50_fpn (" +
               (first.empty() ? std::string("it has tensors torchvision's has not")
                              : "its tensor " + first + " differs or is missing") +
               "); model.onnx is the export of this architecture";
    return out;
  }
  out.compatible = true;
  for (const auto& [name, tensor] : ours) {
    out.state.emplace_back(name, tensor);
    const std::string suffix = ".running_var";
    if (name.ends_with(suffix)) {
      const std::string tracked =
          name.substr(0, name.size() - suffix.size()) + ".num_batches_tracked";
      bool present = false;
      for (const auto& [other, t] : ours)
        present = present || other == tracked;
      if (!present) out.state.emplace_back(tracked, at::zeros({}, at::kLong));
    }
  }

  // The keywords that make torchvision run it as the engine does, and what none can.
  const model::RPNOptions& rpn = model.rpn()->options();
  const model::RoIHeadsOptions& roi = model.roiHeads()->options();
  std::vector<std::string> differs;
  out.kwargs.emplace_back("num_classes", static_cast<double>(classes));
  if (resize.mode == dataset::ResizeMode::kShorterSide) {
    out.kwargs.emplace_back("min_size", resize.min_size);
    out.kwargs.emplace_back("max_size", resize.max_size);
  } else {
    differs.push_back("the spec resizes onto a fixed " + std::to_string(resize.canvas_height) +
                      "x" + std::to_string(resize.canvas_width) +
                      " canvas, torchvision by the shorter side");
  }
  out.kwargs.emplace_back("rpn_pre_nms_top_n_test", static_cast<double>(rpn.pre_nms_top_n_test));
  out.kwargs.emplace_back("rpn_post_nms_top_n_test", static_cast<double>(rpn.post_nms_top_n_test));
  out.kwargs.emplace_back("rpn_nms_thresh", rpn.nms_thresh_test);
  out.kwargs.emplace_back("box_score_thresh", roi.score_thresh);
  out.kwargs.emplace_back("box_nms_thresh", roi.nms_thresh);
  out.kwargs.emplace_back("box_detections_per_img", static_cast<double>(roi.detections_per_image));
  std::ostringstream call;
  call << "torchvision.models.detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None";
  for (const auto& [name, value] : out.kwargs)
    call << ", " << name << "=" << number(value);
  call << ")";
  if (model.rpn()->anchorGenerator().options().mode == model::AnchorOptions::Mode::Tao)
    differs.push_back("the spec's anchors (anchor_scale, aspect_ratios) are not torchvision's");
  if (rpn.min_size > 1.001e-3) differs.push_back("rpn_min_size " + number(rpn.min_size));
  out.note = "model.pth loads with strict=True into " + call.str();
  out.same_detections = differs.empty();
  if (differs.empty()) {
    out.note += ", which then gives the engine's detections";
  } else {
    out.note += "; its detections differ from the engine's: ";
    for (size_t i = 0; i < differs.size(); ++i)
      out.note += (i ? "; " : "") + differs[i];
  }
  return out;
}

}  // namespace mrcnn::exporter

#include "engine/export/onnx_export.h"

#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

#include <stdexcept>

#include "engine/export/export_stages.h"

namespace mrcnn::exporter {

OnnxModel exportOnnx(model::MaskRCNNImpl& model, const OnnxExportOptions& options) {
  if (options.opset < 16 || options.opset > 17) {
    throw std::invalid_argument("--opset " + std::to_string(options.opset) +
                                ": the export writes opset 16 or 17 (RoiAlign's half-pixel "
                                "modes need 16; this ONNX library knows up to 17)");
  }
  const int64_t num_classes = model.numClasses();
  if (static_cast<int64_t>(options.category_ids.size()) != num_classes) {
    throw std::invalid_argument("ONNX export: " + std::to_string(options.category_ids.size()) +
                                " category ids for a model of " + std::to_string(num_classes) +
                                " classes");
  }
  model.eval();
  torch::NoGradGuard no_grad;

  onnx::ModelProto proto;
  proto.set_ir_version(onnx::IR_VERSION);
  proto.set_producer_name("mrcnn-workbench");
  proto.set_producer_version(options.producer_version);
  proto.set_model_version(1);
  auto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  for (const auto& [key, value] : options.metadata) {
    auto* entry = proto.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  }
  onnx::GraphProto& graph = *proto.mutable_graph();
  graph.set_name("mask_rcnn");

  GraphBuilder g(graph);
  const ModuleIndex modules(model);
  const Value image = g.input("image", Element::kFloat, {int64_t{3}, "height", "width"});
  const InputGeometry input =
      emitPreprocess(g, image, PreprocessOptions{options.resize, options.pad_multiple});
  const std::vector<Value> features =
      emitBackbone(g, modules, model.options().backbone, input.batch);
  const Value proposals = emitProposals(g, modules, *model.rpn(), features, input);
  const DetectionValues d =
      emitRoIHeads(g, modules, model.roiHeads()->options(), features, proposals, input);

  const Value boxes = emitBoxesToInput(g, d.boxes, input);
  const Value category_ids = g.weight(
      "category_ids", at::tensor(options.category_ids, at::TensorOptions().dtype(at::kLong)));
  const Value labels = g.op("Gather", {category_ids, d.labels}, {{"axis", 0}});
  g.output(boxes, "boxes", Element::kFloat, {"detections", int64_t{4}});
  g.output(labels, "labels", Element::kInt64, {"detections"});
  g.output(d.scores, "scores", Element::kFloat, {"detections"});
  if (!d.masks.empty()) {
    const int64_t m = 2 * model.roiHeads()->options().mask_roi_size;
    g.output(d.masks, "masks", Element::kFloat, {"detections", int64_t{1}, m, m});
  }

  checkModel(proto);

  OnnxModel out;
  out.nodes = graph.node_size();
  out.initializers = graph.initializer_size();
  for (const auto& t : graph.initializer())
    out.weight_bytes += static_cast<int64_t>(t.raw_data().size());
  if (!proto.SerializeToString(&out.bytes))
    throw std::runtime_error("ONNX export: the model could not be serialized");
  return out;
}

}  // namespace mrcnn::exporter

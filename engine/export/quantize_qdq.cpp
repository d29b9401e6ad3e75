#include "engine/export/quantize_qdq.h"

#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "engine/export/bias_correction.h"
#include "engine/export/onnx_graph.h"

namespace mrcnn::exporter {
namespace {

onnx::ModelProto parse(const std::string& bytes) {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(bytes))
    throw std::invalid_argument("int8: the fp32 model could not be read as ONNX");
  return proto;
}

std::string serialize(const onnx::ModelProto& proto) {
  std::string bytes;
  if (!proto.SerializeToString(&bytes))
    throw std::runtime_error("int8: the model could not be serialized");
  return bytes;
}

bool isQuantOp(const std::string& op) {
  return op == "Conv" || op == "ConvTranspose" || op == "Gemm";
}

int64_t intAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return a.i();
  return fallback;
}

// The output-channel axis of a layer's weights: Conv [O, I, k, k] and Gemm with transB
// [O, I]: 0; ConvTranspose [I, O, k, k] and Gemm without transB [I, O]: 1.
int64_t channelAxis(const onnx::NodeProto& node) {
  if (node.op_type() == "ConvTranspose") return 1;
  if (node.op_type() == "Gemm") return intAttribute(node, "transB", 0) == 1 ? 0 : 1;
  return 0;
}

at::Tensor floatTensor(const onnx::TensorProto& t) {
  if (t.data_type() != onnx::TensorProto_DataType_FLOAT || t.raw_data().empty())
    throw std::invalid_argument("int8: the weights " + t.name() + " are not raw float32");
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  return at::from_blob(const_cast<char*>(t.raw_data().data()), dims,
                       at::TensorOptions().dtype(at::kFloat))
      .clone();
}

void setTensor(onnx::TensorProto& proto, const std::string& name, const at::Tensor& tensor,
               onnx::TensorProto_DataType type) {
  const at::Tensor t = tensor.contiguous();
  proto.set_name(name);
  proto.set_data_type(type);
  for (int64_t d : t.sizes())
    proto.add_dims(d);
  proto.set_raw_data(std::string(static_cast<const char*>(t.data_ptr()), t.nbytes()));
}

onnx::NodeProto makeNode(const std::string& type, const std::string& name,
                         const std::vector<std::string>& inputs, const std::string& output,
                         int64_t axis = -1) {
  onnx::NodeProto node;
  node.set_op_type(type);
  node.set_name(name);
  for (const auto& i : inputs)
    node.add_input(i);
  node.add_output(output);
  if (axis >= 0) {
    auto* a = node.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto_AttributeType_INT);
    a->set_i(axis);
  }
  return node;
}

// The layers of the graph that could run in int8, by weight initializer, in order.
struct Layers {
  std::vector<QuantCandidate> candidates;
  std::map<std::string, const onnx::TensorProto*> initializers;
};

Layers layersOf(const onnx::GraphProto& graph) {
  Layers out;
  for (const auto& t : graph.initializer())
    out.initializers[t.name()] = &t;
  std::map<std::string, std::string> produced_by;  // value -> the weights of the layer
  for (const auto& node : graph.node()) {
    if (isQuantOp(node.op_type()) && node.input_size() >= 2)
      produced_by[node.output(0)] = node.input(1);
  }
  std::map<std::string, size_t> index;
  for (const auto& node : graph.node()) {
    if (!isQuantOp(node.op_type()) || node.input_size() < 2) continue;
    const auto found = out.initializers.find(node.input(1));
    if (found == out.initializers.end() ||
        found->second->data_type() != onnx::TensorProto_DataType_FLOAT) {
      continue;
    }
    auto [it, fresh] = index.emplace(node.input(1), out.candidates.size());
    if (fresh) out.candidates.push_back({node.input(1), node.op_type(), {}, {}});
    QuantCandidate& c = out.candidates[it->second];
    c.inputs.push_back(node.input(0));
    if (const auto p = produced_by.find(node.input(0)); p != produced_by.end())
      c.producers.push_back(p->second);
  }
  return out;
}

// Why each layer stays float, in the candidates' order ("" when it is quantised).
std::vector<std::string> floatReasons(const std::vector<QuantCandidate>& candidates,
                                      const Int8Policy& policy) {
  std::vector<std::string> out;
  std::set<std::string> quantised;
  for (const QuantCandidate& c : candidates) {
    std::string why;
    for (const auto& [name, reason] : policy.keep_float)
      if (name == c.weight) why = reason;
    for (const std::string& p : c.producers) {
      if (why.empty() && policy.float_after_quantised && quantised.count(p)) {
        why = "it reads the output of " + p +
              " (int8) directly: such a pair is int8 only where the export's check finds "
              "fp32's detections kept (OpenVINO 2026.4's CPU plugin computes it wrong where the "
              "first layer's bias is all zero)";
      }
    }
    if (why.empty()) quantised.insert(c.weight);
    out.push_back(why);
  }
  return out;
}

// Weights symmetric per output channel (`axis`): int8 values within +-levels and the scales.
struct QuantizedWeights {
  at::Tensor values, scales;
  at::Tensor dequantised;  // what a runtime computes with
};

QuantizedWeights quantizeWeights(const at::Tensor& weights, int64_t axis, double levels) {
  std::vector<int64_t> others;
  for (int64_t d = 0; d < weights.dim(); ++d)
    if (d != axis) others.push_back(d);
  const at::Tensor extent = weights.abs().amax(others);
  QuantizedWeights q;
  q.scales = at::where(extent > 0, extent / levels, at::ones_like(extent)).to(at::kFloat);
  std::vector<int64_t> view(static_cast<size_t>(weights.dim()), 1);
  view[static_cast<size_t>(axis)] = -1;
  q.values = at::round(weights / q.scales.view(view)).clamp(-127, 127).to(at::kChar);
  q.dequantised = q.values.to(at::kFloat) * q.scales.view(view);
  return q;
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}

// The shift of a quantised layer's bias (bias_correction.h), or an undefined tensor where it
// keeps its bias; the decision says which and why.
at::Tensor biasCorrection(const onnx::NodeProto& node, const at::Tensor& weights,
                          const at::Tensor& dequantised, const Layers& layers,
                          const InputMeans& means, LayerDecision& d) {
  const auto found = means.find(d.weight);
  std::string missing;
  const std::string bias = node.input_size() > 2 ? node.input(2) : "";
  const LayerWindows windows = layerWindows(node, weights.sizes().vec());
  if (found == means.end()) {
    missing = "the calibration has no input means for it (a cache made before bias correction)";
  } else if (!windows.describable) {
    missing = "its windows are not given as explicit pads";
  } else if (!bias.empty() && !layers.initializers.count(bias)) {
    missing = "its bias is computed, not a weight";
  }
  if (!missing.empty()) {
    d.why += "; bias kept as it is: " + missing;
    return {};
  }
  const at::Tensor shift = biasShift(windows, weights - dequantised, found->second);
  d.bias_corrected = true;
  d.bias_shift_mean = shift.abs().mean().item<double>();
  d.bias_shift_max = shift.abs().max().item<double>();
  d.why += "; bias corrected by its int8 weights' mean error on the calibration images (shift " +
           number(d.bias_shift_mean) + " on average, " + number(d.bias_shift_max) + " at most)";
  return shift;
}

// The node reads its bias plus `shift`: a new initializer made once per bias and layer (a
// layer without a bias gets one). Returns the bias it no longer reads, or "".
std::string correctBias(onnx::NodeProto& node, const at::Tensor& shift, const Layers& layers,
                        std::vector<onnx::TensorProto>& added,
                        std::map<std::string, std::string>& corrected) {
  const std::string weight = node.input(1);
  const std::string bias = node.input_size() > 2 ? node.input(2) : "";
  const std::string key = bias + "|" + weight;
  if (!corrected.count(key)) {
    at::Tensor base = at::zeros({shift.size(0)}, at::kDouble);
    if (!bias.empty()) base = floatTensor(*layers.initializers.at(bias)).to(at::kDouble).reshape({-1});
    if (base.numel() != shift.numel()) {
      throw std::invalid_argument("int8: the bias " + bias + " of " + weight + " has " +
                                  std::to_string(base.numel()) + " values for " +
                                  std::to_string(shift.numel()) + " output channels");
    }
    onnx::TensorProto t;
    setTensor(t, (bias.empty() ? weight + "/bias" : bias) + "/corrected",
              (base + shift).to(at::kFloat), onnx::TensorProto_DataType_FLOAT);
    corrected[key] = t.name();
    added.push_back(std::move(t));
  }
  if (bias.empty()) {
    node.add_input(corrected.at(key));
  } else {
    node.set_input(2, corrected.at(key));
  }
  return bias;
}

}  // namespace

Int8Policy defaultInt8Policy() {
  Int8Policy p;
  p.keep_float = {
      {"rpn/head/cls_logits.weight",
       "the RPN's objectness logits: their order picks the proposals (top-k, NMS)"},
      {"rpn/head/bbox_pred.weight", "the RPN's box deltas: read as coordinates"},
      {"roi_heads/box/cls_score.weight", "the class scores: the detections' scores and order"},
      {"roi_heads/box/bbox_pred.weight", "the box regression: read as coordinates"},
      {"roi_heads/mask/mask_fcn_logits.weight", "the mask logits: thresholded at 0.5"},
  };
  return p;
}

std::vector<QuantCandidate> quantCandidates(const std::string& model_bytes) {
  const onnx::ModelProto proto = parse(model_bytes);
  return layersOf(proto.graph()).candidates;
}

std::vector<std::string> calibrationValues(const std::string& model_bytes,
                                           const Int8Policy& policy) {
  std::vector<std::string> values;
  std::set<std::string> seen;
  const std::vector<QuantCandidate> candidates = quantCandidates(model_bytes);
  const std::vector<std::string> reasons = floatReasons(candidates, policy);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const QuantCandidate& c = candidates[i];
    if (!reasons[i].empty()) continue;
    for (const std::string& v : c.inputs)
      if (seen.insert(v).second) values.push_back(v);
  }
  return values;
}

std::string withProbeOutputs(const std::string& model_bytes,
                             const std::vector<std::string>& values) {
  onnx::ModelProto proto = parse(model_bytes);
  for (const std::string& v : values) {
    auto* info = proto.mutable_graph()->add_output();
    info->set_name(v);
    info->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  }
  return serialize(proto);
}

ActivationQuant activationQuant(const ActivationRange& range, RangeChoice choice) {
  const double lo = choice == RangeChoice::kMinMax ? range.min : range.low;
  const double hi = choice == RangeChoice::kMinMax ? range.max : range.high;
  ActivationQuant q;
  // Nothing negative seen at all (not only below the percentile): a ReLU's output.
  q.is_unsigned = range.min >= 0;
  const double extent = q.is_unsigned ? std::max(hi, 0.0) : std::max(std::abs(lo), std::abs(hi));
  const double levels = q.is_unsigned ? 255.0 : 127.0;
  q.scale = extent > 1e-12 ? static_cast<float>(extent / levels) : 1.0f;
  return q;
}

Int8Model quantizeQdq(const std::string& model_bytes, const Calibration& calibration,
                      const Int8Policy& policy) {
  const ActivationRanges& ranges = calibration.ranges;
  onnx::ModelProto proto = parse(model_bytes);
  onnx::GraphProto& graph = *proto.mutable_graph();
  const Layers layers = layersOf(graph);

  Int8Model out;
  std::set<std::string> quantised_weights;
  const std::vector<std::string> reasons = floatReasons(layers.candidates, policy);
  for (size_t i = 0; i < layers.candidates.size(); ++i) {
    const QuantCandidate& c = layers.candidates[i];
    LayerDecision d{c.weight, c.op, false, {}};
    if (!reasons[i].empty()) {
      d.why = "float: " + reasons[i];
    } else {
      for (const std::string& v : c.inputs) {
        if (!ranges.count(v)) {
          throw std::invalid_argument("int8: no calibrated range for the activation " + v +
                                      " (the input of " + c.weight + ")");
        }
      }
      d.quantised = true;
      const ActivationQuant a = activationQuant(ranges.at(c.inputs.front()), policy.range);
      const bool seven = policy.seven_bit_signed && !a.is_unsigned;
      d.why = std::string("int8: weights symmetric per output channel") +
              (seven ? " in 7 bits (a signed input: no int16 overflow without VNNI)" : "") +
              ", input " + (a.is_unsigned ? "uint8" : "int8") + " scale " + number(a.scale) +
              (c.inputs.size() > 1 ? " (first of " + std::to_string(c.inputs.size()) + " uses)"
                                   : std::string());
      quantised_weights.insert(c.weight);
    }
    out.layers.push_back(std::move(d));
  }

  // The new node list: Q/DQ of an activation and DQ of weights written before their first
  // quantised consumer, which then reads the dequantised values.
  std::map<std::string, std::string> dequantised;  // activation or weight -> its DQ output
  std::map<std::string, at::Tensor> shifts;        // weight -> its bias correction
  std::map<std::string, std::string> corrected;    // bias|weight -> the corrected bias
  std::set<std::string> replaced_biases;
  std::map<std::string, size_t> decision_of;
  for (size_t i = 0; i < out.layers.size(); ++i)
    decision_of[out.layers[i].weight] = i;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  std::vector<onnx::TensorProto> added;
  for (const onnx::NodeProto& original : graph.node()) {
    onnx::NodeProto node = original;
    if (isQuantOp(node.op_type()) && node.input_size() >= 2 &&
        quantised_weights.count(node.input(1))) {
      const std::string x = node.input(0), w = node.input(1);
      if (!dequantised.count(x)) {
        const ActivationQuant a = activationQuant(ranges.at(x), policy.range);
        onnx::TensorProto scale, zero;
        setTensor(scale, x + "/q_scale", at::scalar_tensor(a.scale, at::kFloat),
                  onnx::TensorProto_DataType_FLOAT);
        setTensor(
            zero, x + "/q_zero",
            a.is_unsigned ? at::scalar_tensor(0, at::kByte) : at::scalar_tensor(0, at::kChar),
            a.is_unsigned ? onnx::TensorProto_DataType_UINT8 : onnx::TensorProto_DataType_INT8);
        added.push_back(scale);
        added.push_back(zero);
        *nodes.Add() = makeNode("QuantizeLinear", x + "/QuantizeLinear",
                                {x, scale.name(), zero.name()}, x + "/quantized");
        *nodes.Add() = makeNode("DequantizeLinear", x + "/DequantizeLinear",
                                {x + "/quantized", scale.name(), zero.name()}, x + "/dequantized");
        dequantised[x] = x + "/dequantized";
      }
      if (!dequantised.count(w)) {
        const int64_t axis = channelAxis(node);
        const at::Tensor weights = floatTensor(*layers.initializers.at(w));
        const double levels =
            policy.seven_bit_signed && !activationQuant(ranges.at(x), policy.range).is_unsigned
                ? 63.0
                : 127.0;
        const QuantizedWeights q = quantizeWeights(weights, axis, levels);
        onnx::TensorProto qw, scale, zero;
        setTensor(qw, w + "/int8", q.values, onnx::TensorProto_DataType_INT8);
        setTensor(scale, w + "/scale", q.scales, onnx::TensorProto_DataType_FLOAT);
        setTensor(zero, w + "/zero", at::zeros({q.scales.size(0)}, at::kChar),
                  onnx::TensorProto_DataType_INT8);
        added.push_back(qw);
        added.push_back(scale);
        added.push_back(zero);
        *nodes.Add() = makeNode("DequantizeLinear", w + "/DequantizeLinear",
                                {qw.name(), scale.name(), zero.name()}, w + "/dequantized", axis);
        dequantised[w] = w + "/dequantized";
        if (policy.bias_correction) {
          shifts[w] = biasCorrection(node, weights, q.dequantised, layers,
                                     calibration.input_means, out.layers[decision_of.at(w)]);
        }
      }
      if (const auto shift = shifts.find(w); shift != shifts.end() && shift->second.defined()) {
        const std::string replaced = correctBias(node, shift->second, layers, added, corrected);
        if (!replaced.empty()) replaced_biases.insert(replaced);
      }
      node.set_input(0, dequantised.at(x));
      node.set_input(1, dequantised.at(w));
    }
    *nodes.Add() = std::move(node);
  }
  graph.mutable_node()->Swap(&nodes);

  // The float weights that were quantised are gone, and the biases no node reads any more
  // (corrected); the rest stay.
  std::set<std::string> read;
  for (const auto& node : graph.node())
    read.insert(node.input().begin(), node.input().end());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
  for (const auto& t : graph.initializer()) {
    const bool unread_bias = replaced_biases.count(t.name()) && !read.count(t.name());
    if (!quantised_weights.count(t.name()) && !unread_bias) *initializers.Add() = t;
  }
  for (auto& t : added)
    *initializers.Add() = std::move(t);
  graph.mutable_initializer()->Swap(&initializers);

  auto* meta = proto.add_metadata_props();
  meta->set_key("quantization");
  meta->set_value("int8 QDQ");
  checkModel(proto);
  out.nodes = graph.node_size();
  for (const auto& t : graph.initializer())
    out.weight_bytes += static_cast<int64_t>(t.raw_data().size());
  out.bytes = serialize(proto);
  return out;
}

}  // namespace mrcnn::exporter

#include "engine/export/onnx_graph.h"

#include <ATen/ATen.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <stdexcept>

namespace mrcnn::exporter {
namespace {

onnx::TensorProto_DataType protoType(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return onnx::TensorProto_DataType_FLOAT;
    case at::kDouble:
      return onnx::TensorProto_DataType_DOUBLE;
    case at::kLong:
      return onnx::TensorProto_DataType_INT64;
    case at::kBool:
      return onnx::TensorProto_DataType_BOOL;
    default:
      throw std::invalid_argument(std::string("ONNX export: no element type for ") +
                                  c10::toString(t));
  }
}

void fillTensor(onnx::TensorProto& proto, const std::string& name, const at::Tensor& tensor) {
  const at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
  proto.set_name(name);
  proto.set_data_type(protoType(t.scalar_type()));
  for (int64_t d : t.sizes())
    proto.add_dims(d);
  proto.set_raw_data(std::string(static_cast<const char*>(t.data_ptr()), t.nbytes()));
}

void setType(onnx::ValueInfoProto& info, Element type, const std::vector<Dim>& dims) {
  auto* tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(static_cast<int>(type));
  auto* shape = tensor->mutable_shape();
  for (const Dim& d : dims) {
    auto* dim = shape->add_dim();
    if (const auto* size = std::get_if<int64_t>(&d)) {
      dim->set_dim_value(*size);
    } else {
      dim->set_dim_param(std::get<std::string>(d));
    }
  }
}

void setAttribute(onnx::AttributeProto& a, const Attribute& attribute) {
  a.set_name(attribute.name);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          a.set_type(onnx::AttributeProto_AttributeType_INT);
          a.set_i(v);
        } else if constexpr (std::is_same_v<T, float>) {
          a.set_type(onnx::AttributeProto_AttributeType_FLOAT);
          a.set_f(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          a.set_type(onnx::AttributeProto_AttributeType_STRING);
          a.set_s(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          a.set_type(onnx::AttributeProto_AttributeType_INTS);
          for (int64_t x : v)
            a.add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          a.set_type(onnx::AttributeProto_AttributeType_FLOATS);
          for (float x : v)
            a.add_floats(x);
        } else {
          a.set_type(onnx::AttributeProto_AttributeType_TENSOR);
          fillTensor(*a.mutable_t(), "", v);
        }
      },
      attribute.data);
}

}  // namespace

GraphBuilder::GraphBuilder(onnx::GraphProto& graph) : graph_(graph) {}

Value GraphBuilder::fresh(const std::string& hint) {
  return (scope_.empty() ? std::string() : scope_ + "/") + hint + "_" + std::to_string(counter_++);
}

Value GraphBuilder::input(const std::string& name, Element type, const std::vector<Dim>& dims) {
  auto* info = graph_.add_input();
  info->set_name(name);
  setType(*info, type, dims);
  return name;
}

void GraphBuilder::output(const Value& value, const std::string& name, Element type,
                          const std::vector<Dim>& dims) {
  auto* node = graph_.add_node();
  node->set_op_type("Identity");
  node->set_name("outputs/" + name);
  node->add_input(value);
  node->add_output(name);
  auto* info = graph_.add_output();
  info->set_name(name);
  setType(*info, type, dims);
}

Value GraphBuilder::weight(const std::string& name, const at::Tensor& tensor) {
  const Value v = (scope_.empty() ? std::string() : scope_ + "/") + name;
  fillTensor(*graph_.add_initializer(), v, tensor);
  return v;
}

Value GraphBuilder::ints(const std::vector<int64_t>& values) {
  const Value v = fresh("ints");
  fillTensor(*graph_.add_initializer(), v,
             at::tensor(values, at::TensorOptions().dtype(at::kLong))
                 .reshape({static_cast<int64_t>(values.size())}));
  return v;
}

Value GraphBuilder::int64Scalar(int64_t value) {
  const Value v = fresh("int");
  fillTensor(*graph_.add_initializer(), v,
             at::scalar_tensor(value, at::TensorOptions().dtype(at::kLong)));
  return v;
}

Value GraphBuilder::floats(const std::vector<float>& values, const std::vector<int64_t>& shape) {
  const Value v = fresh("floats");
  at::Tensor t = at::tensor(values, at::TensorOptions().dtype(at::kFloat));
  t = shape.empty() ? t.reshape({static_cast<int64_t>(values.size())}) : t.reshape(shape);
  fillTensor(*graph_.add_initializer(), v, t);
  return v;
}

Value GraphBuilder::floatScalar(float value) {
  const Value v = fresh("float");
  fillTensor(*graph_.add_initializer(), v,
             at::scalar_tensor(value, at::TensorOptions().dtype(at::kFloat)));
  return v;
}

Value GraphBuilder::doubleScalar(double value) {
  const Value v = fresh("double");
  fillTensor(*graph_.add_initializer(), v,
             at::scalar_tensor(value, at::TensorOptions().dtype(at::kDouble)));
  return v;
}

std::vector<Value> GraphBuilder::node(const std::string& type, const std::vector<Value>& inputs,
                                      size_t outputs, const std::vector<Attribute>& attributes) {
  auto* node = graph_.add_node();
  node->set_op_type(type);
  const Value name = fresh(type);
  node->set_name(name);
  for (const Value& in : inputs)
    node->add_input(in);
  std::vector<Value> out;
  for (size_t k = 0; k < outputs; ++k) {
    out.push_back(outputs == 1 ? name : name + ":" + std::to_string(k));
    node->add_output(out.back());
  }
  for (const Attribute& a : attributes)
    setAttribute(*node->add_attribute(), a);
  return out;
}

Value GraphBuilder::op(const std::string& type, const std::vector<Value>& inputs,
                       const std::vector<Attribute>& attributes) {
  return node(type, inputs, 1, attributes).front();
}

Value GraphBuilder::dim(const Value& x, int64_t axis) {
  return op("Gather", {op("Shape", {x}), ints({axis})}, {{"axis", 0}});
}

Value GraphBuilder::pick(const Value& x, int64_t index, int64_t axis) {
  return op("Gather", {x, int64Scalar(index)}, {{"axis", axis}});
}

Value GraphBuilder::take(const Value& x, const std::vector<int64_t>& indices, int64_t axis) {
  return op("Gather", {x, ints(indices)}, {{"axis", axis}});
}

Value GraphBuilder::unsqueeze(const Value& x, const std::vector<int64_t>& axes) {
  return op("Unsqueeze", {x, ints(axes)});
}

Value GraphBuilder::reshape(const Value& x, const std::vector<int64_t>& shape) {
  return op("Reshape", {x, ints(shape)});
}

Value GraphBuilder::scalar(const Value& x) {
  return op("Squeeze", {x, ints({0})});
}

Value GraphBuilder::where(const Value& condition) {
  return reshape(op("NonZero", {condition}), {-1});
}

void checkModel(onnx::ModelProto& proto) {
  try {
    onnx::checker::check_model(proto);
    onnx::ShapeInferenceOptions strict(/*check_type_val=*/true, /*strict_mode_val=*/1);
    onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(), strict);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("the exported graph fails the ONNX checks: ") + e.what());
  }
  // Shape inference annotated the graph's values; the file keeps only what was built.
  proto.mutable_graph()->clear_value_info();
}

}  // namespace mrcnn::exporter

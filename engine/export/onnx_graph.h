// A small writer of ONNX graphs: named values, nodes with attributes, weights and constants
// as initializers, the graph's inputs and outputs. The exporter's stages (export_*.cpp) build
// the Mask R-CNN graph with it; nothing here knows the model.
//
// Values are names. Every node and value gets a name of its own under the current scope
// ("backbone/layer1.0/Conv_12"), so that a runtime's error or profile names the stage.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace onnx {
class GraphProto;
class ModelProto;
}

namespace mrcnn::exporter {

using Value = std::string;

// ONNX element types used here (TensorProto.DataType).
enum class Element : int { kFloat = 1, kInt64 = 7, kBool = 9, kDouble = 11 };

struct Attribute {
  using Data = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                            at::Tensor>;
  std::string name;
  Data data;
  Attribute(std::string n, int64_t v) : name(std::move(n)), data(v) {}
  Attribute(std::string n, int v) : name(std::move(n)), data(int64_t{v}) {}
  Attribute(std::string n, float v) : name(std::move(n)), data(v) {}
  Attribute(std::string n, double v) : name(std::move(n)), data(static_cast<float>(v)) {}
  Attribute(std::string n, const char* v) : name(std::move(n)), data(std::string(v)) {}
  Attribute(std::string n, std::string v) : name(std::move(n)), data(std::move(v)) {}
  Attribute(std::string n, std::vector<int64_t> v) : name(std::move(n)), data(std::move(v)) {}
  Attribute(std::string n, std::vector<float> v) : name(std::move(n)), data(std::move(v)) {}
  // A tensor attribute (ConstantOfShape's value): one element.
  Attribute(std::string n, at::Tensor v) : name(std::move(n)), data(std::move(v)) {}
};

// A dimension of a graph input or output: a size, or a name for a dynamic one.
using Dim = std::variant<int64_t, std::string>;

class GraphBuilder {
 public:
  explicit GraphBuilder(onnx::GraphProto& graph);

  // The scope prefixes the names of what is added next.
  void setScope(std::string scope) { scope_ = std::move(scope); }
  const std::string& scope() const { return scope_; }

  Value input(const std::string& name, Element type, const std::vector<Dim>& dims);
  // `value` leaves the graph as `name` (an Identity node gives it that name).
  void output(const Value& value, const std::string& name, Element type,
              const std::vector<Dim>& dims);

  // A tensor as an initializer (float32, float64, int64; copied, contiguous, on the CPU).
  Value weight(const std::string& name, const at::Tensor& tensor);
  // Constants, as initializers: a 1-D int64 list, and scalars (0-D).
  Value ints(const std::vector<int64_t>& values);
  Value int64Scalar(int64_t value);
  Value floats(const std::vector<float>& values, const std::vector<int64_t>& shape = {});
  Value floatScalar(float value);
  Value doubleScalar(double value);

  // One node: its type, inputs ("" for an optional input left out), attributes; returns its
  // first output. node() returns all `outputs` of them.
  Value op(const std::string& type, const std::vector<Value>& inputs,
           const std::vector<Attribute>& attributes = {});
  std::vector<Value> node(const std::string& type, const std::vector<Value>& inputs, size_t outputs,
                          const std::vector<Attribute>& attributes = {});

  // ---- Shorthands for the common shapes of nodes ----
  // Dimension `axis` of x's shape as a 1-D int64 tensor of one element.
  Value dim(const Value& x, int64_t axis);
  // x[..., index] along `axis` (the axis removed) and x[..., indices] (kept).
  Value pick(const Value& x, int64_t index, int64_t axis);
  Value take(const Value& x, const std::vector<int64_t>& indices, int64_t axis);
  Value unsqueeze(const Value& x, const std::vector<int64_t>& axes);
  Value reshape(const Value& x, const std::vector<int64_t>& shape);
  // 1-D int64 [1] -> scalar.
  Value scalar(const Value& x);
  // The rows of `x` (axis 0) where the 1-D bool `condition` holds: their indices, 1-D.
  Value where(const Value& condition);

 private:
  Value fresh(const std::string& hint);

  onnx::GraphProto& graph_;
  std::string scope_;
  int64_t counter_ = 0;
};

// The ONNX checker and strict shape inference over a whole model; the annotations shape
// inference adds are removed again. Throws std::runtime_error with the checker's message.
void checkModel(onnx::ModelProto& proto);

}  // namespace mrcnn::exporter

#include "engine/export/bias_correction.h"

#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <stdexcept>

namespace mrcnn::exporter {
namespace {

const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::vector<int64_t> ints(const onnx::NodeProto& node, const std::string& name,
                          std::vector<int64_t> fallback) {
  const onnx::AttributeProto* a = attribute(node, name);
  if (a == nullptr) return fallback;
  return {a->ints().begin(), a->ints().end()};
}

int64_t ceilDiv(int64_t n, int64_t d) { return n >= 0 ? (n + d - 1) / d : -((-n) / d); }
int64_t floorDiv(int64_t n, int64_t d) { return n >= 0 ? n / d : -((-n + d - 1) / d); }

std::string dims(at::IntArrayRef sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i)
    text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

struct Sums {
  at::Tensor total;
  int64_t positions = 0;
};

// A convolution: per input channel and kernel position, the input summed over the positions
// that kernel position meets, one for each output (the padding's zeros count nothing).
Sums convolutionSums(const at::Tensor& x, const LayerWindows& w) {
  const at::Tensor image = x.to(at::kDouble).sum(0);  // [C, H, W]
  const int64_t height = image.size(1), width = image.size(2);
  const std::vector<int64_t>&k = w.kernel, &s = w.strides, &p = w.pads, &d = w.dilations;
  const int64_t rows = (height + p[0] + p[2] - d[0] * (k[0] - 1) - 1) / s[0] + 1;
  const int64_t cols = (width + p[1] + p[3] - d[1] * (k[1] - 1) - 1) / s[1] + 1;
  at::Tensor total = at::zeros({image.size(0), k[0], k[1]}, at::kDouble);
  if (rows <= 0 || cols <= 0) return {total, 0};
  const at::Tensor padded = at::constant_pad_nd(image, {p[1], p[3], p[0], p[2]});
  for (int64_t a = 0; a < k[0]; ++a) {
    const at::Tensor band = padded.slice(1, a * d[0], a * d[0] + s[0] * (rows - 1) + 1, s[0]);
    for (int64_t b = 0; b < k[1]; ++b) {
      total.select(1, a).select(1, b).copy_(
          band.slice(2, b * d[1], b * d[1] + s[1] * (cols - 1) + 1, s[1]).sum({1, 2}));
    }
  }
  return {total, x.size(0) * rows * cols};
}

// A transposed convolution: input row h meets output row h * stride + a * dilation - pad
// through kernel row a; the sum is over the inputs whose output lies inside the result.
Sums transposedSums(const at::Tensor& x, const LayerWindows& w) {
  const at::Tensor image = x.to(at::kDouble).sum(0);
  const int64_t size[2] = {image.size(1), image.size(2)};
  const std::vector<int64_t>&k = w.kernel, &s = w.strides, &p = w.pads, &d = w.dilations;
  int64_t out[2];
  for (size_t i = 0; i < 2; ++i) {
    out[i] = s[i] * (size[i] - 1) + w.output_padding[i] + d[i] * (k[i] - 1) + 1 - p[i] - p[i + 2];
  }
  at::Tensor total = at::zeros({image.size(0), k[0], k[1]}, at::kDouble);
  if (out[0] <= 0 || out[1] <= 0) return {total, 0};
  // The inputs along axis i that kernel position a sends inside the output: [first, last].
  const auto inside = [&](size_t i, int64_t a) {
    const int64_t first = std::max<int64_t>(0, ceilDiv(p[i] - a * d[i], s[i]));
    const int64_t last = std::min(size[i] - 1, floorDiv(out[i] - 1 + p[i] - a * d[i], s[i]));
    return std::pair<int64_t, int64_t>{first, last};
  };
  for (int64_t a = 0; a < k[0]; ++a) {
    const auto [r0, r1] = inside(0, a);
    for (int64_t b = 0; b < k[1]; ++b) {
      const auto [c0, c1] = inside(1, b);
      if (r1 < r0 || c1 < c0) continue;
      total.select(1, a).select(1, b).copy_(
          image.slice(1, r0, r1 + 1).slice(2, c0, c1 + 1).sum({1, 2}));
    }
  }
  return {total, x.size(0) * out[0] * out[1]};
}

Sums windowSums(const at::Tensor& x, const LayerWindows& w, const std::string& value) {
  if (w.op == "Gemm") {
    if (x.dim() != 2) throw std::runtime_error("int8 bias correction: " + value + " is not 2-D");
    const at::Tensor rows = x.to(at::kDouble);
    return w.trans_a ? Sums{rows.sum(1), rows.size(1)} : Sums{rows.sum(0), rows.size(0)};
  }
  if (x.dim() != 4) throw std::runtime_error("int8 bias correction: " + value + " is not 4-D");
  return w.op == "ConvTranspose" ? transposedSums(x, w) : convolutionSums(x, w);
}

}  // namespace

LayerWindows layerWindows(const onnx::NodeProto& node, const std::vector<int64_t>& weight_dims) {
  LayerWindows w;
  w.op = node.op_type();
  if (w.op == "Gemm") {
    for (const auto& a : node.attribute()) {
      if (a.name() == "transA") w.trans_a = a.i() != 0;
      if (a.name() == "transB") w.trans_b = a.i() != 0;
      if (a.name() == "alpha") w.alpha = a.f();
      if (a.name() == "beta") w.beta = a.f();
    }
    w.describable = weight_dims.size() == 2 && w.beta != 0;
    return w;
  }
  w.kernel = ints(node, "kernel_shape", {});
  if (w.kernel.empty() && weight_dims.size() == 4) w.kernel = {weight_dims[2], weight_dims[3]};
  w.strides = ints(node, "strides", {1, 1});
  w.pads = ints(node, "pads", {0, 0, 0, 0});
  w.dilations = ints(node, "dilations", {1, 1});
  w.output_padding = ints(node, "output_padding", {0, 0});
  if (const onnx::AttributeProto* g = attribute(node, "group")) w.group = g->i();
  const onnx::AttributeProto* pad_mode = attribute(node, "auto_pad");
  const bool explicit_pads = pad_mode == nullptr || pad_mode->s() == "NOTSET" ||
                             pad_mode->s() == "VALID";
  if (pad_mode != nullptr && pad_mode->s() == "VALID") w.pads = {0, 0, 0, 0};
  w.describable = explicit_pads && attribute(node, "output_shape") == nullptr &&
                  weight_dims.size() == 4 && w.kernel.size() == 2 && w.strides.size() == 2 &&
                  w.pads.size() == 4 && w.dilations.size() == 2 &&
                  w.output_padding.size() == 2 && w.group >= 1;
  return w;
}

InputMeanCollector::InputMeanCollector(const std::string& model_bytes) {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(model_bytes))
    throw std::invalid_argument("int8: the fp32 model could not be read as ONNX");
  std::map<std::string, std::vector<int64_t>> weight_dims;  // the float initializers
  for (const auto& t : proto.graph().initializer()) {
    if (t.data_type() == onnx::TensorProto_DataType_FLOAT)
      weight_dims[t.name()] = {t.dims().begin(), t.dims().end()};
  }
  for (const auto& node : proto.graph().node()) {
    if (node.input_size() < 2 || !weight_dims.count(node.input(1))) continue;
    const std::string& op = node.op_type();
    if (op != "Conv" && op != "ConvTranspose" && op != "Gemm") continue;
    LayerWindows w = layerWindows(node, weight_dims.at(node.input(1)));
    if (w.describable) uses_.emplace(node.input(0), Use{node.input(1), std::move(w)});
  }
}

void InputMeanCollector::add(const std::string& value, const at::Tensor& tensor) {
  const auto [first, last] = uses_.equal_range(value);
  for (auto it = first; it != last; ++it) {
    if (tensor.numel() == 0) continue;
    const Sums s = windowSums(tensor.detach(), it->second.windows, value);
    Sum& sum = sums_[it->second.weight];
    sum.total = sum.total.defined() ? sum.total + s.total : s.total;
    sum.positions += s.positions;
  }
}

InputMeans InputMeanCollector::means() const {
  InputMeans out;
  for (const auto& [weight, sum] : sums_) {
    if (sum.positions <= 0) continue;
    const at::Tensor mean = (sum.total / static_cast<double>(sum.positions)).contiguous();
    InputMean m;
    m.shape = mean.sizes().vec();
    m.values.assign(mean.data_ptr<double>(), mean.data_ptr<double>() + mean.numel());
    m.positions = sum.positions;
    out[weight] = std::move(m);
  }
  return out;
}

at::Tensor biasShift(const LayerWindows& windows, const at::Tensor& weight_error,
                     const InputMean& mean) {
  const at::Tensor error = weight_error.to(at::kDouble).contiguous();
  const at::Tensor m =
      at::tensor(mean.values, at::kDouble).reshape(at::IntArrayRef(mean.shape)).contiguous();
  const auto misfit = [&] {
    return std::invalid_argument("int8 bias correction: input means of shape " + dims(m.sizes()) +
                                 " do not fit " + windows.op + " weights " +
                                 dims(error.sizes()));
  };
  if (windows.op == "Gemm") {
    if (error.dim() != 2 || m.dim() != 1) throw misfit();
    const at::Tensor w = windows.trans_b ? error : error.t();  // [O, K]
    if (w.size(1) != m.size(0)) throw misfit();
    return w.matmul(m) * (windows.alpha / windows.beta);
  }
  if (error.dim() != 4 || m.dim() != 3 || m.size(1) != error.size(2) ||
      m.size(2) != error.size(3)) {
    throw misfit();
  }
  const int64_t g = windows.group, taps = error.size(2) * error.size(3);
  if (windows.op == "ConvTranspose") {
    // [C, O/g, kh, kw]: C input channels in g groups.
    const int64_t c = error.size(0), per_group_out = error.size(1);
    if (m.size(0) != c || c % g != 0) throw misfit();
    const at::Tensor w = error.reshape({g, c / g, per_group_out, taps})
                             .permute({0, 2, 1, 3})
                             .reshape({g, per_group_out, c / g * taps});
    return at::bmm(w, m.reshape({g, c / g * taps, 1})).reshape({g * per_group_out});
  }
  // Conv [O, C/g, kh, kw].
  const int64_t o = error.size(0), per_group_in = error.size(1);
  if (m.size(0) != per_group_in * g || o % g != 0) throw misfit();
  return at::bmm(error.reshape({g, o / g, per_group_in * taps}),
                 m.reshape({g, per_group_in * taps, 1}))
      .reshape({o});
}

}  // namespace mrcnn::exporter

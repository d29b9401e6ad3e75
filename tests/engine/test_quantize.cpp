// int8 pieces on their own (engine/export/quantize_qdq.h, calibration.h, bias_correction.h):
// the QDQ pass over a small graph written with the exporter's GraphBuilder, the range
// statistics on tensors whose percentiles are known, the bias correction against the layers
// computed directly on random inputs, and the calibration cache read back or refused. The whole int8
// export against ONNX Runtime and OpenVINO is tests/app/test_export_int8.cpp.
#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <fstream>
#include <map>

#include "engine/export/bias_correction.h"
#include "engine/export/calibration.h"
#include "engine/export/onnx_graph.h"
#include "engine/export/quantize_qdq.h"

namespace {

using namespace mrcnn::exporter;

// x [1, 3, 8, 8] -> conv1 -> Relu -> {conv2, head/logits} ; conv2 -> Flatten -> fc.
// conv2 and head/logits read the same activation.
struct Tiny {
  std::string bytes;
  at::Tensor conv1, conv2, logits, fc;
};

Tiny tinyModel() {
  at::manual_seed(3);
  Tiny t;
  t.conv1 = at::randn({4, 3, 3, 3});
  t.conv2 = at::randn({5, 4, 3, 3}) * at::linspace(0.01, 3, 5).view({5, 1, 1, 1});
  t.logits = at::randn({2, 4, 1, 1});
  t.fc = at::randn({6, 5 * 8 * 8});
  onnx::ModelProto proto;
  proto.set_ir_version(onnx::IR_VERSION);
  auto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  proto.mutable_graph()->set_name("tiny");
  GraphBuilder g(*proto.mutable_graph());
  const Value x = g.input("x", Element::kFloat, {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{8}});
  const std::vector<Attribute> same = {{"kernel_shape", std::vector<int64_t>{3, 3}},
                                       {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  g.setScope("body");
  const Value a = g.op("Relu", {g.op("Conv", {x, g.weight("conv1.weight", t.conv1)}, same)});
  const Value b = g.op(
      "Conv", {a, g.weight("conv2.weight", t.conv2), g.weight("conv2.bias", at::randn({5}))}, same);
  g.setScope("head");
  const Value logits = g.op("Conv", {a, g.weight("logits.weight", t.logits)},
                            {{"kernel_shape", std::vector<int64_t>{1, 1}}});
  const Value y = g.op("Gemm", {g.op("Flatten", {b}, {{"axis", 1}}), g.weight("fc.weight", t.fc)},
                       {{"transB", 1}});
  g.output(logits, "logits", Element::kFloat, {int64_t{1}, int64_t{2}, int64_t{8}, int64_t{8}});
  g.output(y, "y", Element::kFloat, {int64_t{1}, int64_t{6}});
  proto.SerializeToString(&t.bytes);
  return t;
}

Int8Policy headStaysFloat() {
  Int8Policy p;
  p.range = RangeChoice::kMinMax;
  p.keep_float = {{"head/logits.weight", "an output read as numbers"}};
  return p;
}

const onnx::TensorProto* initializer(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

at::Tensor tensorOf(const onnx::TensorProto& t, at::ScalarType type) {
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  return at::from_blob(const_cast<char*>(t.raw_data().data()), dims,
                       at::TensorOptions().dtype(type))
      .clone();
}

}  // namespace

class QuantizeTest : public QObject {
  Q_OBJECT
 private slots:
  // Every Conv/Gemm with initializer weights is a candidate, shared activations measured once.
  void candidatesAndTheValuesToCalibrate() {
    const Tiny t = tinyModel();
    const std::vector<QuantCandidate> c = quantCandidates(t.bytes);
    QCOMPARE(c.size(), size_t{4});
    QCOMPARE(c[0].weight, std::string("body/conv1.weight"));
    QCOMPARE(c[3].op, std::string("Gemm"));
    const std::vector<std::string> values = calibrationValues(t.bytes, headStaysFloat());
    // x, the Relu's output (conv2's input; the float head reads it too), the Flatten's output.
    QCOMPARE(values.size(), size_t{3});
    QCOMPARE(values[0], std::string("x"));
  }

  // Weights: int8, one scale per output channel (max |w| / 127), dequantised within half a
  // step; activations: uint8 from 0 after a ReLU, int8 around 0 elsewhere; the kept layer
  // untouched and reading the float activation; the result passes the ONNX checks.
  void theQdqGraph() {
    const Tiny t = tinyModel();
    const std::vector<std::string> values = calibrationValues(t.bytes, headStaysFloat());
    ActivationRanges ranges;
    ranges[values[0]] = {-2.5, 3.0, -2.0, 2.0, 1};
    ranges[values[1]] = {0.0, 5.1, 0.0, 4.0, 1};
    ranges[values[2]] = {-7.0, 6.0, -5.0, 5.0, 1};
    const Int8Model q = quantizeQdq(t.bytes, {ranges, {}}, headStaysFloat());
    QCOMPARE(q.layers.size(), size_t{4});
    QVERIFY(q.layers[0].quantised && q.layers[1].quantised && q.layers[3].quantised);
    QVERIFY(!q.layers[2].quantised);
    QVERIFY(q.layers[2].why.find("an output read as numbers") != std::string::npos);

    onnx::ModelProto proto;
    QVERIFY(proto.ParseFromString(q.bytes));
    const onnx::GraphProto& g = proto.graph();
    QVERIFY(!initializer(g, "body/conv2.weight"));  // the float weights are gone
    QVERIFY(initializer(g, "head/logits.weight"));  // the kept layer's are not
    const onnx::TensorProto* w = initializer(g, "body/conv2.weight/int8");
    const onnx::TensorProto* s = initializer(g, "body/conv2.weight/scale");
    QVERIFY(w && s);
    QCOMPARE(w->data_type(), int(onnx::TensorProto_DataType_INT8));
    const at::Tensor scales = tensorOf(*s, at::kFloat);
    QVERIFY(at::allclose(scales, t.conv2.abs().amax({1, 2, 3}) / 127.0));
    const at::Tensor back = tensorOf(*w, at::kChar).to(at::kFloat) * scales.view({5, 1, 1, 1});
    QVERIFY(((back - t.conv2).abs() <= scales.view({5, 1, 1, 1}) / 2 + 1e-7).all().item<bool>());
    QCOMPARE(tensorOf(*w, at::kChar).abs().amax().item<int>(), 127);
    // conv1 reads x, which is signed: its weights in 7 bits (no int16 overflow without VNNI).
    const onnx::TensorProto* w1 = initializer(g, "body/conv1.weight/int8");
    QVERIFY(w1);
    QCOMPARE(tensorOf(*w1, at::kChar).abs().amax().item<int>(), 63);
    QVERIFY(at::allclose(tensorOf(*initializer(g, "body/conv1.weight/scale"), at::kFloat),
                         t.conv1.abs().amax({1, 2, 3}) / 63.0));
    QVERIFY(q.layers[0].why.find("7 bits") != std::string::npos);

    // The activations: x signed (int8, 3.0 / 127), the ReLU's output unsigned (5.1 / 255 with
    // minmax); one Q/DQ pair for the ReLU's output though two layers read it.
    const onnx::TensorProto* xs = initializer(g, "x/q_scale");
    const onnx::TensorProto* xz = initializer(g, "x/q_zero");
    QVERIFY(xs && xz);
    QCOMPARE(xz->data_type(), int(onnx::TensorProto_DataType_INT8));
    QCOMPARE(tensorOf(*xs, at::kFloat).item<float>(), 3.0f / 127.0f);
    const onnx::TensorProto* rz = initializer(g, values[1] + "/q_zero");
    QVERIFY(rz);
    QCOMPARE(rz->data_type(), int(onnx::TensorProto_DataType_UINT8));
    QCOMPARE(tensorOf(*initializer(g, values[1] + "/q_scale"), at::kFloat).item<float>(),
             5.1f / 255.0f);
    int quantize_nodes = 0;
    for (const auto& node : g.node()) {
      quantize_nodes += node.op_type() == "QuantizeLinear" ? 1 : 0;
      if (node.input_size() > 1 && node.input(1) == "head/logits.weight")
        QCOMPARE(node.input(0), values[1]);  // the float layer reads the float activation
      if (node.input_size() > 1 && node.input(1) == "body/conv2.weight/dequantized")
        QCOMPARE(node.input(0), values[1] + "/dequantized");
    }
    QCOMPARE(quantize_nodes, 3);

    // The percentile choice uses the percentile ends: 4.0 / 255 for the ReLU's output.
    Int8Policy percentile = headStaysFloat();
    percentile.range = RangeChoice::kPercentile;
    QCOMPARE(activationQuant(ranges[values[1]], percentile.range).scale, 4.0f / 255.0f);
    QCOMPARE(activationQuant(ranges[values[2]], percentile.range).scale, 5.0f / 127.0f);

    // A range missing (a cache from another model) is named.
    ranges.erase(values[2]);
    try {
      quantizeQdq(t.bytes, {ranges, {}}, headStaysFloat());
      QFAIL("a missing range was not refused");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find(values[2]) != std::string::npos, e.what());
    }
  }

  // The biases: each quantised layer's bias plus the shift biasShift gives for its int8
  // weights (a new initializer; the old one gone when nothing reads it), a layer without a
  // bias given one; none where the policy turns it off or the calibration has no means.
  void quantisedLayersGetCorrectedBiases() {
    const Tiny t = tinyModel();
    const std::vector<std::string> values = calibrationValues(t.bytes, headStaysFloat());
    Calibration cal;
    cal.ranges[values[0]] = {-2.5, 3.0, -2.0, 2.0, 1};
    cal.ranges[values[1]] = {0.0, 5.1, 0.0, 4.0, 1};
    cal.ranges[values[2]] = {-7.0, 6.0, -5.0, 5.0, 1};
    InputMeanCollector collector(t.bytes);
    collector.add(values[0], at::randn({1, 3, 8, 8}));
    collector.add(values[1], at::relu(at::randn({1, 4, 8, 8})));
    collector.add(values[2], at::randn({1, 5 * 8 * 8}));
    cal.input_means = collector.means();
    // head/logits reads the ReLU's output too: measured, though it stays float.
    QCOMPARE(cal.input_means.size(), size_t{4});
    QCOMPARE(cal.input_means.at("body/conv1.weight").shape, (std::vector<int64_t>{3, 3, 3}));
    QCOMPARE(cal.input_means.at("head/fc.weight").shape, (std::vector<int64_t>{320}));

    const Int8Model q = quantizeQdq(t.bytes, cal, headStaysFloat());
    onnx::ModelProto proto;
    QVERIFY(proto.ParseFromString(q.bytes));
    const onnx::GraphProto& g = proto.graph();
    for (size_t i : {0, 1, 3}) {
      QVERIFY2(q.layers[i].bias_corrected && q.layers[i].bias_shift_max > 0 &&
                   q.layers[i].why.find("; bias corrected by its int8 weights' mean error") !=
                       std::string::npos,
               q.layers[i].why.c_str());
    }
    QVERIFY(!q.layers[2].bias_corrected);
    // conv2's bias: the old one replaced, its values plus the shift.
    QVERIFY(!initializer(g, "body/conv2.bias"));
    const onnx::TensorProto* b2 = initializer(g, "body/conv2.bias/corrected");
    QVERIFY(b2);
    const at::Tensor w2 = tensorOf(*initializer(g, "body/conv2.weight/int8"), at::kChar)
                              .to(at::kFloat) *
                          tensorOf(*initializer(g, "body/conv2.weight/scale"), at::kFloat)
                              .view({5, 1, 1, 1});
    onnx::ModelProto original;
    QVERIFY(original.ParseFromString(t.bytes));
    const at::Tensor bias2 = tensorOf(*initializer(original.graph(), "body/conv2.bias"), at::kFloat);
    const onnx::NodeProto* conv2 = nullptr;
    for (const auto& node : original.graph().node())
      if (node.input_size() > 1 && node.input(1) == "body/conv2.weight") conv2 = &node;
    QVERIFY(conv2);
    const at::Tensor shift = biasShift(layerWindows(*conv2, {5, 4, 3, 3}), t.conv2 - w2,
                                       cal.input_means.at("body/conv2.weight"));
    QVERIFY(at::allclose(tensorOf(*b2, at::kFloat).to(at::kDouble), bias2.to(at::kDouble) + shift,
                         1e-6, 1e-7));
    // conv1 had none: it reads one now, the shift alone; the float head reads no corrected bias.
    bool conv1_biased = false;
    for (const auto& node : g.node()) {
      if (node.input_size() < 2) continue;
      if (node.input(1) == "body/conv1.weight/dequantized")
        conv1_biased = node.input_size() == 3 && node.input(2) == "body/conv1.weight/bias/corrected";
      if (node.input(1) == "head/logits.weight") QCOMPARE(node.input_size(), 2);
    }
    QVERIFY(conv1_biased);

    Int8Policy off = headStaysFloat();
    off.bias_correction = false;
    onnx::ModelProto plain;
    QVERIFY(plain.ParseFromString(quantizeQdq(t.bytes, cal, off).bytes));
    QVERIFY(initializer(plain.graph(), "body/conv2.bias"));
    QVERIFY(!initializer(plain.graph(), "body/conv2.bias/corrected"));
    const Int8Model without = quantizeQdq(t.bytes, {cal.ranges, {}}, headStaysFloat());
    QVERIFY(!without.layers[1].bias_corrected);
    QVERIFY2(without.layers[1].why.find("bias kept as it is: the calibration has no input means") !=
                 std::string::npos,
             without.layers[1].why.c_str());
  }

  // biasShift from the collected means equals the mean, over two random inputs and every
  // output position, of the layer computed with (weights - int8 weights) directly: convolutions
  // with stride, asymmetric padding, dilation and groups, a transposed convolution with padding
  // and output padding, fully connected layers either way round with alpha and beta.
  void theBiasShiftIsTheMeanErrorOfTheInt8Weights() {
    at::manual_seed(11);
    struct Case {
      std::string op;
      std::vector<int64_t> x, w;
      std::vector<Attribute> attributes;
    };
    const std::vector<Case> cases = {
        {"Conv", {2, 4, 11, 9}, {6, 2, 3, 3},
         {{"kernel_shape", std::vector<int64_t>{3, 3}},
          {"strides", std::vector<int64_t>{2, 1}},
          {"pads", std::vector<int64_t>{1, 0, 2, 1}},
          {"dilations", std::vector<int64_t>{1, 2}},
          {"group", 2}}},
        {"Conv", {1, 3, 7, 7}, {5, 3, 1, 1}, {{"kernel_shape", std::vector<int64_t>{1, 1}}}},
        {"ConvTranspose", {2, 4, 5, 6}, {4, 3, 3, 2},
         {{"kernel_shape", std::vector<int64_t>{3, 2}},
          {"strides", std::vector<int64_t>{2, 3}},
          {"pads", std::vector<int64_t>{1, 0, 2, 1}},
          {"output_padding", std::vector<int64_t>{1, 0}},
          {"group", 2}}},
        {"ConvTranspose", {1, 3, 4, 4}, {3, 2, 2, 2},
         {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}},
        {"Gemm", {7, 5}, {3, 5}, {{"transB", 1}, {"alpha", 0.5f}, {"beta", 2.0f}}},
        {"Gemm", {5, 7}, {5, 3}, {{"transA", 1}}},
    };
    for (const Case& c : cases) {
      const at::Tensor w = at::randn(c.w, at::kDouble);
      const at::Tensor error = at::randn(c.w, at::kDouble) * 0.01;
      onnx::ModelProto proto;
      proto.set_ir_version(onnx::IR_VERSION);
      proto.add_opset_import()->set_version(17);
      proto.mutable_graph()->set_name("one");
      GraphBuilder g(*proto.mutable_graph());
      std::vector<Dim> x_dims(c.x.begin(), c.x.end());
      const Value x = g.input("x", Element::kFloat, x_dims);
      const Value y = g.op(c.op, {x, g.weight("w", w.to(at::kFloat))}, c.attributes);
      g.output(y, "y", Element::kFloat, {std::string("n")});
      std::string bytes;
      proto.SerializeToString(&bytes);
      InputMeanCollector collector(bytes);
      const at::Tensor x1 = at::randn(c.x, at::kDouble) + 0.5, x2 = at::rand(c.x, at::kDouble);
      collector.add("x", x1);
      collector.add("x", x2);
      const InputMeans means = collector.means();
      QCOMPARE(means.size(), size_t{1});
      const LayerWindows windows = layerWindows(proto.graph().node(0), c.w);
      QVERIFY(windows.describable);
      const at::Tensor shift = biasShift(windows, error, means.at("w"));

      // The layer with the error as its weights, run on both inputs: its outputs' mean.
      const auto apply = [&](const at::Tensor& in) {
        if (c.op == "Gemm") {
          const at::Tensor a = windows.trans_a ? in.t() : in;
          const at::Tensor b = windows.trans_b ? error.t() : error;
          return (a.matmul(b) * windows.alpha).unsqueeze(-1).unsqueeze(-1);  // [N, O, 1, 1]
        }
        // Padding as given (asymmetric): pad, then run without.
        const std::vector<int64_t>& p = windows.pads;
        if (c.op == "Conv") {
          return at::conv2d(at::constant_pad_nd(in, {p[1], p[3], p[0], p[2]}), error,
                            std::optional<at::Tensor>(), windows.strides,
                            std::vector<int64_t>{0, 0}, windows.dilations, windows.group);
        }
        // Transposed: the full result, then cropped by the pads.
        const at::Tensor full =
            at::conv_transpose2d(in, error, std::optional<at::Tensor>(), windows.strides,
                                 std::vector<int64_t>{0, 0}, windows.output_padding,
                                 windows.group, windows.dilations);
        return full.slice(2, p[0], full.size(2) - p[2]).slice(3, p[1], full.size(3) - p[3]);
      };
      const at::Tensor y1 = apply(x1), y2 = apply(x2);
      const at::Tensor expected =
          (y1.sum({0, 2, 3}) + y2.sum({0, 2, 3})) /
          static_cast<double>(y1.numel() / y1.size(1) + y2.numel() / y2.size(1)) / windows.beta;
      QVERIFY2(at::allclose(shift, expected, 1e-9, 1e-12),
               qPrintable(QString::fromStdString(c.op) + " " +
                          QString::number((shift - expected).abs().max().item<double>())));
    }
    // Means of another layer's shape are refused.
    try {
      LayerWindows gemm;
      gemm.op = "Gemm";
      biasShift(gemm, at::zeros({3, 5}), InputMean{{4}, {1, 2, 3, 4}, 1});
      QFAIL("means of the wrong shape were used");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("do not fit Gemm weights [3, 5]") != std::string::npos,
               e.what());
    }
  }

  // A layer reading a quantised layer's output directly stays float (OpenVINO 2026.4 gives
  // zeros from such a pair where the first layer's bias is all zero; the export task checks
  // and turns the rule off where it can); one behind an activation does not.
  void aLayerReadingAnInt8LayerDirectlyStaysFloat() {
    onnx::ModelProto proto;
    proto.set_ir_version(onnx::IR_VERSION);
    proto.add_opset_import()->set_version(17);
    proto.mutable_graph()->set_name("chain");
    GraphBuilder g(*proto.mutable_graph());
    const Value x = g.input("x", Element::kFloat, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{4}});
    const std::vector<Attribute> k1 = {{"kernel_shape", std::vector<int64_t>{1, 1}}};
    const Value a = g.op("Conv", {x, g.weight("a.weight", at::randn({2, 2, 1, 1}))}, k1);
    const Value b = g.op("Conv", {a, g.weight("b.weight", at::randn({2, 2, 1, 1}))}, k1);
    const Value c =
        g.op("Conv", {g.op("Relu", {b}), g.weight("c.weight", at::randn({2, 2, 1, 1}))}, k1);
    g.output(c, "y", Element::kFloat, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{4}});
    std::string bytes;
    proto.SerializeToString(&bytes);
    ActivationRanges ranges;
    for (const QuantCandidate& cand : quantCandidates(bytes))
      ranges[cand.inputs.front()] = {-1, 1, -1, 1, 1};
    Int8Policy policy;
    const Int8Model q = quantizeQdq(bytes, {ranges, {}}, policy);
    QCOMPARE(q.layers.size(), size_t{3});
    QVERIFY(q.layers[0].quantised);
    QVERIFY(!q.layers[1].quantised);
    QVERIFY2(q.layers[1].why.find("reads the output of a.weight") != std::string::npos,
             q.layers[1].why.c_str());
    QVERIFY(q.layers[2].quantised);
    QCOMPARE(calibrationValues(bytes, policy).size(), size_t{2});
    policy.float_after_quantised = false;
    const Int8Model all = quantizeQdq(bytes, {ranges, {}}, policy);
    QVERIFY(all.layers[0].quantised && all.layers[1].quantised && all.layers[2].quantised);
  }

  // 0..9999 as one image: the extremes exact, the 99% ends within a bin of 100 and 9900;
  // over two images the percentile ends are the mean, the extremes the extremes.
  void rangesFromKnownValues() {
    RangeCollector c(99.0);
    c.add("v", at::arange(10000, at::kFloat).reshape({10, 1000}));
    ActivationRange r = c.ranges().at("v");
    QCOMPARE(r.min, 0.0);
    QCOMPARE(r.max, 9999.0);
    const double bin = 9999.0 / 2048;
    QVERIFY2(std::abs(r.high - 9900) <= bin && std::abs(r.low - 99) <= bin,
             qPrintable(QString("low %1 high %2").arg(r.low).arg(r.high)));
    c.add("v", at::arange(10000, at::kFloat) * 2);
    r = c.ranges().at("v");
    QCOMPARE(r.images, int64_t{2});
    QCOMPARE(r.max, 19998.0);
    QVERIFY(std::abs(r.high - (9900 + 19800) / 2.0) <= 2 * bin);
    // A ReLU's output: many zeros, nothing negative; the low end stays at 0.
    RangeCollector relu;
    relu.add("r", at::relu(at::randn({100000})));
    QCOMPARE(relu.ranges().at("r").min, 0.0);
    QCOMPARE(relu.ranges().at("r").low, 0.0);
  }

  // The cache written and read back; a file that is not one is refused by name and key; the
  // fingerprint ignores the file's metadata and changes with the weights.
  void theCalibrationCache() {
    QTemporaryDir dir;
    const std::filesystem::path file = dir.filePath("cal.json").toStdString();
    CalibrationCache cache;
    const Tiny t = tinyModel();
    cache.fingerprint = modelFingerprint(t.bytes);
    cache.spec = "spec.txt";
    cache.weights = "model.pt";
    cache.images = 2;
    cache.measured.ranges["x"] = {-1.5, 2.25, -1.0, 2.0, 2};
    writeCalibrationCache(file, cache);
    const CalibrationCache back = readCalibrationCache(file);
    QCOMPARE(back.fingerprint, cache.fingerprint);
    QCOMPARE(back.measured.ranges.at("x").min, -1.5);
    QCOMPARE(back.measured.ranges.at("x").high, 2.0);
    QCOMPARE(back.measured.ranges.at("x").images, int64_t{2});
    QVERIFY(back.measured.input_means.empty());
    // The input means: read back to the last bit (a reused cache builds the same biases).
    cache.measured.input_means["conv.weight"] = {{2, 1, 3}, {0.1, 1.0 / 3, -2e-9, 7, 8.5, 1e300},
                                                 12345};
    writeCalibrationCache(file, cache);
    const InputMean means = readCalibrationCache(file).measured.input_means.at("conv.weight");
    QCOMPARE(means.shape, (std::vector<int64_t>{2, 1, 3}));
    QCOMPARE(means.values, cache.measured.input_means["conv.weight"].values);
    QCOMPARE(means.positions, int64_t{12345});
    cache.measured.input_means.clear();
    QVERIFY(!back.fully_connected);  // none measured, none written
    cache.fully_connected = LayerTiming{2, 63.25, 56.5};
    writeCalibrationCache(file, cache);
    const CalibrationCache timed = readCalibrationCache(file);
    QVERIFY(timed.fully_connected);
    QCOMPARE(timed.fully_connected->images, int64_t{2});
    QCOMPARE(timed.fully_connected->int8_ms, 63.25);
    QCOMPARE(timed.fully_connected->float_ms, 56.5);
    QVERIFY(!timed.range_choice);  // none chosen, none written
    cache.range_choice = CalibrationCache::RangeDecision{"minmax", "0.88 against 0.98"};
    writeCalibrationCache(file, cache);
    const CalibrationCache chosen = readCalibrationCache(file);
    QVERIFY(chosen.range_choice);
    QCOMPARE(chosen.range_choice->range, std::string("minmax"));
    QCOMPARE(chosen.range_choice->why, std::string("0.88 against 0.98"));

    onnx::ModelProto proto;
    QVERIFY(proto.ParseFromString(t.bytes));
    auto* meta = proto.add_metadata_props();
    meta->set_key("weights");
    meta->set_value("elsewhere.pt");
    std::string with_meta;
    proto.SerializeToString(&with_meta);
    QCOMPARE(modelFingerprint(with_meta), cache.fingerprint);
    auto* raw = proto.mutable_graph()->mutable_initializer(0)->mutable_raw_data();
    (*raw)[0] = static_cast<char>((*raw)[0] ^ 1);
    std::string changed;
    proto.SerializeToString(&changed);
    QVERIFY(modelFingerprint(changed) != cache.fingerprint);

    std::ofstream(file) << R"({"format": "mrcnn-workbench int8 calibration 1",
      "model_fingerprint": "ab", "spec": "s", "weights": "w", "percentile": 99.9, "images": 1,
      "activations": {"x": {"min": 1, "max": 0, "low": 0, "high": 0, "images": 1}}})";
    try {
      readCalibrationCache(file);
      QFAIL("a range with min > max was read");
    } catch (const CalibrationCacheError& e) {
      const std::string m = e.what();
      QVERIFY2(m.find(file.string()) == 0 && m.find("\"x\"") != std::string::npos, e.what());
    }
    std::ofstream(file) << R"({"format": "mrcnn-workbench int8 calibration 1",
      "model_fingerprint": "ab", "spec": "s", "weights": "w", "percentile": 99.9, "images": 1,
      "fully_connected_timing": {"images": 1, "int8_ms": 0, "float_ms": 5},
      "activations": {"x": {"min": 0, "max": 1, "low": 0, "high": 1, "images": 1}}})";
    try {
      readCalibrationCache(file);
      QFAIL("a timing of 0 ms was read");
    } catch (const CalibrationCacheError& e) {
      QVERIFY2(std::string(e.what()).find("\"fully_connected_timing\"") != std::string::npos,
               e.what());
    }
    std::ofstream(file) << R"({"format": "mrcnn-workbench int8 calibration 1",
      "model_fingerprint": "ab", "spec": "s", "weights": "w", "percentile": 99.9, "images": 1,
      "range_choice": {"range": "entropy", "why": "?"},
      "activations": {"x": {"min": 0, "max": 1, "low": 0, "high": 1, "images": 1}}})";
    try {
      readCalibrationCache(file);
      QFAIL("an unknown range choice was read");
    } catch (const CalibrationCacheError& e) {
      QVERIFY2(std::string(e.what()).find("\"range_choice\"") != std::string::npos, e.what());
    }
    std::ofstream(file) << R"({"format": "mrcnn-workbench int8 calibration 1",
      "model_fingerprint": "ab", "spec": "s", "weights": "w", "percentile": 99.9, "images": 1,
      "activations": {"x": {"min": 0, "max": 1, "low": 0, "high": 1, "images": 1}},
      "input_means": {"fc.weight": {"positions": 3, "shape": [2, 2], "values": [1, 2, 3]}}})";
    try {
      readCalibrationCache(file);
      QFAIL("input means fewer than their shape were read");
    } catch (const CalibrationCacheError& e) {
      QVERIFY2(std::string(e.what()).find("input_means \"fc.weight\": 3 values for the shape's 4") !=
                   std::string::npos,
               e.what());
    }
  }
};

QTEST_GUILESS_MAIN(QuantizeTest)
#include "test_quantize.moc"

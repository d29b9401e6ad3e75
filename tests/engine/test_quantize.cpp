// int8 pieces on their own (engine/export/quantize_qdq.h, calibration.h): the QDQ pass over a
// small graph written with the exporter's GraphBuilder, the range statistics on tensors whose
// percentiles are known, and the calibration cache read back or refused. The whole int8
// export against ONNX Runtime and OpenVINO is tests/app/test_export_int8.cpp.
#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <fstream>
#include <map>

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
    const Int8Model q = quantizeQdq(t.bytes, ranges, headStaysFloat());
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
      quantizeQdq(t.bytes, ranges, headStaysFloat());
      QFAIL("a missing range was not refused");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find(values[2]) != std::string::npos, e.what());
    }
  }

  // A layer reading a quantised layer's output directly stays float (OpenVINO 2026.4 gives
  // zeros from such a pair); one behind an activation does not. The rule can be turned off.
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
    const Int8Model q = quantizeQdq(bytes, ranges, policy);
    QCOMPARE(q.layers.size(), size_t{3});
    QVERIFY(q.layers[0].quantised);
    QVERIFY(!q.layers[1].quantised);
    QVERIFY2(q.layers[1].why.find("reads the output of a.weight") != std::string::npos,
             q.layers[1].why.c_str());
    QVERIFY(q.layers[2].quantised);
    QCOMPARE(calibrationValues(bytes, policy).size(), size_t{2});
    policy.float_after_quantised = false;
    const Int8Model all = quantizeQdq(bytes, ranges, policy);
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
    cache.ranges["x"] = {-1.5, 2.25, -1.0, 2.0, 2};
    writeCalibrationCache(file, cache);
    const CalibrationCache back = readCalibrationCache(file);
    QCOMPARE(back.fingerprint, cache.fingerprint);
    QCOMPARE(back.ranges.at("x").min, -1.5);
    QCOMPARE(back.ranges.at("x").high, 2.0);
    QCOMPARE(back.ranges.at("x").images, int64_t{2});
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
  }
};

QTEST_GUILESS_MAIN(QuantizeTest)
#include "test_quantize.moc"

// The mask branch (engine/model/mask_head.h) and its two ops (engine/ops/mask_targets.h,
// engine/ops/paste_masks.h) against torchvision, on the data mask_head_parity.py makes (run
// live with MRCNN_PYTHON): mask targets equal to project_masks_on_boxes, pasted masks equal to
// paste_masks_in_image (probabilities and thresholded), on contiguous and strided inputs; the
// heads' outputs, the loss and its gradient, and maskrcnn_inference with torchvision's weights;
// parameter names (current and legacy) and initialisation. Plus a slow, obvious pasting
// reference written here, edge cases (empty inputs, boxes outside the image, NaN boxes, bad
// arguments) and, where a GPU is, the CUDA kernels against the CPU ones.
#include <torch/cuda.h>
#include <torch/torch.h>

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/mask_head.h"
#include "engine/model/state_dict.h"
#include "engine/ops/mask_targets.h"
#include "engine/ops/paste_masks.h"
#include "tests/common/reference_script.h"
#include "tests/engine/ops_test_support.h"
#include "tests/engine/parity_file.h"

namespace model = mrcnn::model;
namespace ops = mrcnn::ops;

namespace {

using Dict = mrcnn::testing::ParityDict;
using mrcnn::testing::intAt;
using mrcnn::testing::tensorAt;
using mrcnn::testing::tensorsAt;
std::vector<Dict> casesAt(const Dict& d, const char* key) {
  std::vector<Dict> out;
  for (const c10::IValue& v : d.at(key).toList())
    out.push_back(v.toGenericDict());
  return out;
}
model::StateDict stateDictAt(const Dict& d, const char* key) {
  model::StateDict out;
  for (const auto& item : d.at(key).toGenericDict())
    out.emplace_back(item.key().toStringRef(), item.value().toTensor());
  return out;
}

double maxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return INFINITY;
  if (a.numel() == 0) return 0.0;
  return (a.detach().cpu().to(at::kDouble) - b.detach().cpu().to(at::kDouble))
      .abs()
      .max()
      .item<double>();
}
// max |a - b| / max(|b|, floor) over the elements: relative where values are large.
double maxRelDiff(const at::Tensor& a, const at::Tensor& b, double floor = 1.0) {
  if (a.sizes() != b.sizes()) return INFINITY;
  if (a.numel() == 0) return 0.0;
  const at::Tensor x = a.detach().cpu().to(at::kDouble);
  const at::Tensor y = b.detach().cpu().to(at::kDouble);
  return ((x - y).abs() / y.abs().clamp_min(floor)).max().item<double>();
}

QString shapeOf(const at::Tensor& t) {
  QStringList s;
  for (int64_t d : t.sizes())
    s << QString::number(d);
  return "[" + s.join(", ") + "]";
}

// The same values with other strides: a transposed copy viewed back, and a slice of a wider
// tensor. Kernels that assume contiguity read garbage from these.
at::Tensor transposedView(const at::Tensor& t) {
  return t.transpose(-1, -2).contiguous().transpose(-1, -2);
}
at::Tensor slicedView(const at::Tensor& t) {
  return at::cat({t, t}, /*dim=*/1).narrow(1, 0, t.size(1));
}
at::Tensor stridedVector(const at::Tensor& t) {
  return at::stack({t, t}, /*dim=*/1).select(1, 0);
}

// The message of the exception `f` throws, or "" when it does not throw.
using mrcnn::testing::ops_support::errorOf;

#ifdef MRCNN_OPS_HAS_CUDA
constexpr const char* kNoGpu =
    "no CUDA device: the CUDA kernels are built and registered; these checks run where a GPU is";
#else
constexpr const char* kNoGpu = "LibTorch without CUDA: the CUDA kernels are not built";
#endif

// ---- A slow, obvious pasting reference: torchvision's steps one by one ----

// Pads the mask, expands its box and truncates it to integers, resizes the whole padded
// mask to the integer box's size (bilinear, align_corners=False, in double), then copies the
// part inside the image. Boxes entirely outside the image paste nothing.
at::Tensor slowPaste(const at::Tensor& masks, const at::Tensor& boxes, int64_t height,
                     int64_t width, int64_t padding) {
  const int64_t n = masks.size(0), m = masks.size(-1), s = m + 2 * padding;
  const at::Tensor mk = masks.reshape({n, m, m}).to(at::kDouble);
  const at::Tensor bx = boxes.to(at::kFloat);
  at::Tensor out = at::zeros({n, height, width}, at::kDouble);
  const auto scale = static_cast<float>(static_cast<double>(s) / static_cast<double>(m));
  for (int64_t k = 0; k < n; ++k) {
    std::vector<double> padded(static_cast<size_t>(s * s), 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j)
        padded[(i + padding) * s + j + padding] = mk[k][i][j].item<double>();
    const float x1 = bx[k][0].item<float>(), y1 = bx[k][1].item<float>();
    const float x2 = bx[k][2].item<float>(), y2 = bx[k][3].item<float>();
    float w_half = (x2 - x1) * 0.5f, h_half = (y2 - y1) * 0.5f;
    w_half *= scale;
    h_half *= scale;
    const float xc = (x2 + x1) * 0.5f, yc = (y2 + y1) * 0.5f;
    const auto bx0 = static_cast<int64_t>(xc - w_half), by0 = static_cast<int64_t>(yc - h_half);
    const auto bx1 = static_cast<int64_t>(xc + w_half), by1 = static_cast<int64_t>(yc + h_half);
    const int64_t w = std::max<int64_t>(bx1 - bx0 + 1, 1), h = std::max<int64_t>(by1 - by0 + 1, 1);
    // Source coordinate of output index i when resizing s to size: (i + 0.5) * s / size - 0.5,
    // not below 0; the two neighbours and the weight of the upper one.
    auto source = [s](int64_t i, int64_t size, int64_t* lo, int64_t* hi, double* frac) {
      const double src =
          std::max(0.0, (static_cast<double>(i) + 0.5) * static_cast<double>(s) / size - 0.5);
      *lo = std::min(static_cast<int64_t>(std::floor(src)), s - 1);
      *hi = std::min(*lo + 1, s - 1);
      *frac = std::min(src - static_cast<double>(*lo), 1.0);
    };
    std::vector<double> resized(static_cast<size_t>(w * h));
    for (int64_t i = 0; i < h; ++i) {
      int64_t r0, r1;
      double fy;
      source(i, h, &r0, &r1, &fy);
      for (int64_t j = 0; j < w; ++j) {
        int64_t c0, c1;
        double fx;
        source(j, w, &c0, &c1, &fx);
        const double top = padded[r0 * s + c0] * (1 - fx) + padded[r0 * s + c1] * fx;
        const double bottom = padded[r1 * s + c0] * (1 - fx) + padded[r1 * s + c1] * fx;
        resized[i * w + j] = top * (1 - fy) + bottom * fy;
      }
    }
    for (int64_t y = std::max<int64_t>(by0, 0); y < std::min(by1 + 1, height); ++y)
      for (int64_t x = std::max<int64_t>(bx0, 0); x < std::min(bx1 + 1, width); ++x)
        out[k][y][x] = resized[(y - by0) * w + (x - bx0)];
  }
  return out;
}

// Pixels whose thresholded values differ, and whether every one of them is within `tie` of
// the threshold in the reference probabilities.
std::pair<int64_t, bool> thresholdMismatches(const at::Tensor& binary, const at::Tensor& probs,
                                             double threshold, double tie) {
  const at::Tensor expected = probs.gt(threshold);
  const at::Tensor differ = binary.to(at::kBool).ne(expected);
  const int64_t count = differ.sum().item<int64_t>();
  if (count == 0) return {0, true};
  const at::Tensor near = (probs.to(at::kDouble) - threshold).abs().le(tie);
  return {count, differ.logical_and(near.logical_not()).sum().item<int64_t>() == 0};
}

}  // namespace

class TestMaskHead : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString python_;
  QString parityError_;
  c10::IValue parity_;

  Dict parity() const { return parity_.toGenericDict(); }

  // Skip when no Python is configured; fail when it is and the script did not deliver.
  bool parityReady() {
    if (!parityError_.isEmpty()) QTest::qFail(qPrintable(parityError_), __FILE__, __LINE__);
    return parityError_.isEmpty();
  }

 private slots:
  void initTestCase() {
    at::set_num_threads(2);  // as the script: the same reduction order in the convolutions
    python_ = qEnvironmentVariable("MRCNN_PYTHON");
    if (python_.isEmpty()) return;
    const QString out = dir_.filePath("mask_head_parity.pt");
    QString log;
    parityError_ =
        mrcnn::testing::runReferenceScript("tests/engine/mask_head_parity.py", {out}, &log);
    if (!parityError_.isEmpty()) return;
    qInfo("%s", qPrintable(log));
    parityError_ = mrcnn::testing::readParityFile(out, &parity_);
  }

  // ---- The modules ----

  // The state_dict loader maps roi_heads.mask_head.* and roi_heads.mask_predictor.* by name.
  void parameterNamesAreTorchvisions() {
    model::MaskRCNNHeads heads(model::MaskHeadOptions{});
    model::MaskRCNNPredictor predictor(256, 256, 91);
    std::vector<std::string> head_names, predictor_names;
    for (const auto& item : heads->named_parameters())
      head_names.push_back(item.key());
    for (const auto& item : predictor->named_parameters())
      predictor_names.push_back(item.key());
    QCOMPARE(head_names,
             (std::vector<std::string>{"0.0.weight", "0.0.bias", "1.0.weight", "1.0.bias",
                                       "2.0.weight", "2.0.bias", "3.0.weight", "3.0.bias"}));
    QCOMPARE(predictor_names,
             (std::vector<std::string>{"conv5_mask.weight", "conv5_mask.bias",
                                       "mask_fcn_logits.weight", "mask_fcn_logits.bias"}));
    const auto legacy = heads->legacyParameterNames();
    QCOMPARE(legacy.size(), size_t{8});
    QCOMPARE(legacy.front(),
             std::make_pair(std::string("mask_fcn1.weight"), std::string("0.0.weight")));
    QCOMPARE(legacy.back(), std::make_pair(std::string("mask_fcn4.bias"), std::string("3.0.bias")));
    for (const auto& [old_name, new_name] : legacy)
      QVERIFY2(std::find(head_names.begin(), head_names.end(), new_name) != head_names.end(),
               new_name.c_str());
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    const Dict c = parity().at("heads").toGenericDict();
    std::vector<std::string> theirs;
    for (const auto& [name, t] : stateDictAt(c, "heads_state"))
      theirs.push_back(name);
    QCOMPARE(head_names, theirs);
    theirs.clear();
    for (const auto& [name, t] : stateDictAt(c, "predictor_state"))
      theirs.push_back(name);
    QCOMPARE(predictor_names, theirs);
  }

  // He normal with fan out (std sqrt(2 / fan_out)) for every weight, zero head biases, and
  // PyTorch's default (uniform within 1/sqrt(fan_in)) predictor biases, as torchvision.
  void initialisationIsTorchvisions() {
    torch::manual_seed(3);
    model::MaskRCNNHeads heads(model::MaskHeadOptions{});
    model::MaskRCNNPredictor predictor(256, 256, 91);
    auto check_std = [](const at::Tensor& w, double fan_out, const char* name) {
      const double expected = std::sqrt(2.0 / fan_out);
      const double got = w.std().item<double>();
      qInfo("%s: std %.5f, He fan-out %.5f, mean %.2g", name, got, expected,
            w.mean().item<double>());
      QVERIFY2(std::abs(got / expected - 1) < 0.05, name);
      QVERIFY2(std::abs(w.mean().item<double>()) < 0.1 * expected, name);
    };
    for (const auto& item : heads->named_parameters()) {
      if (item.key().ends_with("weight")) {
        check_std(item.value(), 256.0 * 9, item.key().c_str());  // out channels x 3 x 3
      } else {
        QVERIFY2(item.value().abs().max().item<double>() == 0.0, item.key().c_str());
      }
    }
    const auto p = predictor->named_parameters();
    // ConvTranspose2d's weight is [in, out, 2, 2]: PyTorch's fan out is in x 2 x 2.
    check_std(p["conv5_mask.weight"], 256.0 * 4, "conv5_mask.weight");
    check_std(p["mask_fcn_logits.weight"], 91.0, "mask_fcn_logits.weight");
    for (const char* bias : {"conv5_mask.bias", "mask_fcn_logits.bias"}) {
      const double bound =
          1.0 / std::sqrt(256.0 * (std::string(bias).starts_with("conv5") ? 4 : 1));
      QVERIFY2(p[bias].abs().max().item<double>() <= bound, bias);
      QVERIFY2(p[bias].abs().max().item<double>() > 0.0, bias);
    }
  }

  void headsMatchTorchvision() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    const Dict c = parity().at("heads").toGenericDict();
    model::MaskRCNNHeads heads(model::MaskHeadOptions{});
    model::MaskRCNNPredictor predictor(256, 256, 91);
    model::loadStateDict(*heads, stateDictAt(c, "heads_state"), {});
    model::loadStateDict(*predictor, stateDictAt(c, "predictor_state"), {});
    torch::NoGradGuard no_grad;
    const at::Tensor head_out = heads->forward(tensorAt(c, "features"));
    const at::Tensor logits = predictor->forward(head_out);
    const double d_head = maxRelDiff(head_out, tensorAt(c, "head_out"));
    const double d_logits = maxRelDiff(logits, tensorAt(c, "logits"));
    qInfo("heads %s: max rel diff %.3g; logits %s: %.3g", qPrintable(shapeOf(head_out)), d_head,
          qPrintable(shapeOf(logits)), d_logits);
    QVERIFY2(d_head < 1e-4, qPrintable(QString::number(d_head)));
    QVERIFY2(d_logits < 1e-4, qPrintable(QString::number(d_logits)));

    // A file with the old names (torchvision < 0.13) loads into the same parameters.
    model::StateDict old_state;
    for (auto [name, t] : stateDictAt(c, "heads_state")) {
      const std::string block = name.substr(0, name.find('.'));
      name = "mask_fcn" + std::to_string(std::stoi(block) + 1) + name.substr(name.rfind('.'));
      old_state.emplace_back(name, t);
    }
    model::MaskRCNNHeads legacy(model::MaskHeadOptions{});
    model::LoadOptions options;
    options.legacy_names = legacy->legacyParameterNames();
    model::loadStateDict(*legacy, old_state, options);
    QVERIFY(torch::equal(legacy->forward(tensorAt(c, "features")), head_out));
  }

  void lossMatchesMaskrcnnLoss() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    const Dict c = parity().at("heads").toGenericDict();
    const at::Tensor logits = tensorAt(c, "logits").clone().requires_grad_(true);
    const at::Tensor loss =
        model::maskRCNNLoss(logits, tensorsAt(c, "proposals"), tensorsAt(c, "gt_masks"),
                            tensorsAt(c, "gt_labels"), tensorsAt(c, "matched"));
    QCOMPARE(loss.dim(), int64_t{0});
    loss.backward();
    const at::Tensor expected = tensorAt(c, "loss");
    const double rel =
        std::abs(loss.item<double>() - expected.item<double>()) / std::abs(expected.item<double>());
    const double grad = maxRelDiff(logits.grad(), tensorAt(c, "grad"), 1e-6);
    qInfo("mask loss %.7f (torchvision %.7f, rel diff %.3g); gradient max rel diff %.3g",
          loss.item<double>(), expected.item<double>(), rel, grad);
    QVERIFY2(rel < 1e-4, qPrintable(QString::number(rel)));
    QVERIFY2(grad < 1e-4, qPrintable(QString::number(grad)));
    // Only the ground-truth class's map of each RoI receives a gradient.
    QCOMPARE(logits.grad().ne(0).any(/*dim=*/-1).any(-1).sum().item<int64_t>(), logits.size(0));
  }

  void lossWithoutPositivesIsZero() {
    const at::Tensor logits = torch::randn({0, 5, 28, 28}).requires_grad_(true);
    const at::Tensor loss = model::maskRCNNLoss(
        logits, {torch::zeros({0, 4})}, {torch::zeros({2, 30, 40}, torch::kUInt8)},
        {torch::tensor({1, 2}, torch::kLong)}, {torch::zeros({0}, torch::kLong)});
    QCOMPARE(loss.dim(), int64_t{0});
    QCOMPARE(loss.item<double>(), 0.0);
    loss.backward();  // connected to the logits, as torchvision's mask_logits.sum() * 0
    QVERIFY(logits.grad().defined());
    // Bad arguments name what is wrong.
    const std::string e = errorOf([&] {
      model::maskRCNNLoss(torch::randn({3, 5, 28, 28}), {torch::zeros({2, 4})},
                          {torch::zeros({2, 30, 40}, torch::kUInt8)},
                          {torch::tensor({1, 2}, torch::kLong)}, {torch::zeros({2}, torch::kLong)});
    });
    QVERIFY2(e.find("3 mask logit maps for 2 positive proposals") != std::string::npos, e.c_str());
  }

  void inferenceMatchesMaskrcnnInference() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    const Dict c = parity().at("heads").toGenericDict();
    const std::vector<at::Tensor> ours =
        model::maskRCNNInference(tensorAt(c, "logits"), tensorsAt(c, "det_labels"));
    const std::vector<at::Tensor> theirs = tensorsAt(c, "inference");
    QCOMPARE(ours.size(), theirs.size());
    for (size_t i = 0; i < ours.size(); ++i) {
      QVERIFY2(ours[i].sizes() == theirs[i].sizes(),
               qPrintable(shapeOf(ours[i]) + " vs " + shapeOf(theirs[i])));
      QVERIFY2(maxAbsDiff(ours[i], theirs[i]) < 1e-6,
               qPrintable(QString::number(maxAbsDiff(ours[i], theirs[i]))));
    }
    // No detection in one image, none at all.
    const auto some = model::maskRCNNInference(
        torch::randn({2, 4, 28, 28}),
        {torch::zeros({0}, torch::kLong), torch::tensor({3, 1}, torch::kLong)});
    QCOMPARE(some.at(0).sizes().vec(), (std::vector<int64_t>{0, 1, 28, 28}));
    QCOMPARE(some.at(1).sizes().vec(), (std::vector<int64_t>{2, 1, 28, 28}));
    const auto none =
        model::maskRCNNInference(torch::randn({0, 4, 28, 28}), {torch::zeros({0}, torch::kLong)});
    QCOMPARE(none.at(0).sizes().vec(), (std::vector<int64_t>{0, 1, 28, 28}));
  }

  // ---- mrcnn::mask_targets ----

  void maskTargetsMatchProjectMasksOnBoxes() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    for (const Dict& c : casesAt(parity(), "targets")) {
      const at::Tensor masks = tensorAt(c, "gt_masks");
      const at::Tensor rois = tensorAt(c, "rois");
      const at::Tensor matched = tensorAt(c, "matched");
      const int64_t m = intAt(c, "M");
      const at::Tensor expected = tensorAt(c, "expected");
      const at::Tensor ours = ops::mask_targets(masks, rois, matched, m);
      QCOMPARE(ours.scalar_type(), expected.scalar_type());
      const double d = maxAbsDiff(ours, expected);
      const double strided = maxAbsDiff(
          ops::mask_targets(transposedView(masks), slicedView(rois), stridedVector(matched), m),
          expected);
      qInfo("%lld RoIs on %s %s masks, %s RoIs, M = %lld: max |diff| %.3g (strided inputs %.3g)",
            static_cast<long long>(rois.size(0)), qPrintable(shapeOf(masks)),
            c10::toString(masks.scalar_type()), c10::toString(rois.scalar_type()),
            static_cast<long long>(m), d, strided);
      QVERIFY2(d <= 1e-5, qPrintable(QString::number(d)));
      QVERIFY2(strided <= 1e-5, qPrintable(QString::number(strided)));
      if (masks.scalar_type() == at::kByte) {  // bool masks give the same targets
        QVERIFY(torch::equal(ops::mask_targets(masks.to(at::kBool), rois, matched, m), ours));
      }
    }
  }

  void maskTargetsEdgeCases() {
    const at::Tensor masks = torch::zeros({2, 20, 30}, torch::kUInt8);
    const at::Tensor none =
        ops::mask_targets(masks, torch::zeros({0, 4}), torch::zeros({0}, torch::kLong), 28);
    QCOMPARE(none.sizes().vec(), (std::vector<int64_t>{0, 28, 28}));
    QCOMPARE(ops::mask_targets(torch::zeros({0, 20, 30}, torch::kUInt8), torch::zeros({0, 4}),
                               torch::zeros({0}, torch::kLong), 28)
                 .size(0),
             int64_t{0});
    // A box whose sampling points all fall between pixels of the mask's all-ones rectangle
    // (rows 5..14, columns 8..19) gives ones; one outside the image zeros.
    at::Tensor ones = masks.clone();
    ones[1].narrow(0, 5, 10).narrow(1, 8, 12).fill_(1);
    const at::Tensor t = ops::mask_targets(
        ones, torch::tensor({{8.f, 5.f, 19.f, 14.f}, {100.f, 100.f, 120.f, 130.f}}),
        torch::tensor({1, 1}, torch::kLong), 7);
    QCOMPARE(t[0].min().item<float>(), 1.f);
    QCOMPARE(t[1].abs().max().item<float>(), 0.f);

    auto expectError = [](const std::string& message, const char* needle) {
      QVERIFY2(message.find(needle) != std::string::npos,
               qPrintable(QString::fromStdString("\"" + message + "\" lacks \"") + needle + "\""));
    };
    const at::Tensor box = torch::tensor({{1.f, 1.f, 5.f, 5.f}});
    expectError(
        errorOf([&] { ops::mask_targets(masks, box, torch::tensor({2}, torch::kLong), 28); }),
        "matched_idxs[0] = 2 is outside [0, 2)");
    expectError(errorOf([&] {
                  ops::mask_targets(torch::zeros({0, 20, 30}, torch::kUInt8), box,
                                    torch::tensor({0}, torch::kLong), 28);
                }),
                "gt_masks is empty");
    expectError(
        errorOf([&] { ops::mask_targets(masks[0], box, torch::tensor({0}, torch::kLong), 28); }),
        "gt_masks must be a 3-D tensor");
    expectError(
        errorOf([&] { ops::mask_targets(masks, box, torch::tensor({0}, torch::kInt), 28); }),
        "matched_idxs must be int64");
    expectError(errorOf([&] {
                  ops::mask_targets(masks, box.to(torch::kHalf), torch::tensor({0}, torch::kLong),
                                    28);
                }),
                "rois must be float or double");
    expectError(errorOf([&] {
                  ops::mask_targets(masks, box, torch::tensor({0, 1}, torch::kLong), 28);
                }),
                "one index per RoI");
    expectError(
        errorOf([&] { ops::mask_targets(masks, box, torch::tensor({0}, torch::kLong), 0); }),
        "M must be positive");
  }

  // ---- mrcnn::paste_masks ----

  void pasteMatchesPasteMasksInImage() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    int64_t ties = 0;
    for (const Dict& c : casesAt(parity(), "paste")) {
      const at::Tensor masks = tensorAt(c, "masks");  // [N, 1, M, M]
      const at::Tensor boxes = tensorAt(c, "boxes");
      const int64_t h = intAt(c, "height"), w = intAt(c, "width"), pad = intAt(c, "padding");
      const at::Tensor expected = tensorAt(c, "expected");
      const at::Tensor ours = ops::paste_masks(masks, boxes, h, w, pad);
      QCOMPARE(ours.scalar_type(), expected.scalar_type());
      const double d = maxAbsDiff(ours, expected);
      const double squeezed =
          maxAbsDiff(ops::paste_masks(masks.squeeze(1), boxes, h, w, pad), expected);
      const double strided = maxAbsDiff(
          ops::paste_masks(transposedView(masks.squeeze(1)), slicedView(boxes), h, w, pad),
          expected);
      const int64_t exact = ours.eq(expected).sum().item<int64_t>();
      const at::Tensor binary = ops::paste_masks_binary(masks, boxes, h, w, 0.5, pad);
      QCOMPARE(binary.scalar_type(), at::kByte);
      QCOMPARE(binary.sizes(), expected.sizes());
      const auto [mismatches, all_ties] = thresholdMismatches(binary, expected, 0.5, 1e-5);
      ties += mismatches;
      qInfo(
          "%lld masks %s into %lldx%lld, padding %lld: max |diff| %.3g ([N, M, M] %.3g, strided "
          "%.3g), %lld of %lld pixels bit-equal; thresholded at 0.5: %lld pixels differ",
          static_cast<long long>(masks.size(0)), c10::toString(masks.scalar_type()),
          static_cast<long long>(h), static_cast<long long>(w), static_cast<long long>(pad), d,
          squeezed, strided, static_cast<long long>(exact),
          static_cast<long long>(expected.numel()), static_cast<long long>(mismatches));
      QVERIFY2(d <= 1e-5, qPrintable(QString::number(d)));
      QVERIFY2(squeezed <= 1e-5, qPrintable(QString::number(squeezed)));
      QVERIFY2(strided <= 1e-5, qPrintable(QString::number(strided)));
      QVERIFY2(all_ties, "a thresholded pixel differs away from the threshold");
      // Another threshold.
      const auto [m2, t2] = thresholdMismatches(
          ops::paste_masks_binary(masks, boxes, h, w, 0.25, pad), expected, 0.25, 1e-5);
      ties += m2;
      QVERIFY2(t2, "a pixel thresholded at 0.25 differs away from the threshold");
    }
    qInfo("thresholded pixels that differ from torchvision's probabilities > threshold: %lld",
          static_cast<long long>(ties));
  }

  void pasteMatchesSlowReference() {
    torch::manual_seed(5);
    const int64_t h = 60, w = 80;
    const at::Tensor masks = torch::rand({9, 1, 12, 12});
    const at::Tensor boxes = torch::tensor({{10.f, 12.f, 40.f, 30.f},
                                            {-15.f, -8.f, 20.f, 25.f},
                                            {60.f, 45.f, 95.f, 70.f},
                                            {30.3f, 20.7f, 30.9f, 21.1f},
                                            {50.f, 10.f, 45.f, 20.f},
                                            {0.f, 0.f, 80.f, 60.f},
                                            {200.f, 10.f, 260.f, 40.f},    // right of the image
                                            {-90.f, -70.f, -30.f, -20.f},  // above left
                                            {5.5f, 50.25f, 77.75f, 59.5f}});
    for (int64_t pad : {0, 1, 3}) {
      const at::Tensor ours = ops::paste_masks(masks, boxes, h, w, pad);
      const at::Tensor slow = slowPaste(masks, boxes, h, w, pad);
      const double d = maxAbsDiff(ours, slow);
      qInfo("padding %lld: max |diff| to the slow reference %.3g", static_cast<long long>(pad), d);
      QVERIFY2(d <= 1e-5, qPrintable(QString::number(d)));
      QVERIFY(ours[6].abs().max().item<float>() == 0.f && ours[7].abs().max().item<float>() == 0.f);
      QVERIFY(torch::equal(ops::paste_masks_binary(masks, boxes, h, w, 0.5, pad),
                           ours.gt(0.5).to(at::kByte)));
    }
  }

  void pasteEdgeCases() {
    const at::Tensor masks = torch::rand({2, 1, 28, 28});
    const at::Tensor boxes = torch::tensor({{1.f, 2.f, 10.f, 12.f}, {5.f, 5.f, 30.f, 20.f}});
    QCOMPARE(
        ops::paste_masks(torch::zeros({0, 1, 28, 28}), torch::zeros({0, 4}), 40, 50).sizes().vec(),
        (std::vector<int64_t>{0, 40, 50}));
    QCOMPARE(ops::paste_masks_binary(torch::zeros({0, 28, 28}), torch::zeros({0, 4}), 40, 50)
                 .sizes()
                 .vec(),
             (std::vector<int64_t>{0, 40, 50}));
    QCOMPARE(ops::paste_masks(masks, boxes, 0, 50).sizes().vec(), (std::vector<int64_t>{2, 0, 50}));
    // A NaN coordinate pastes nothing; the other mask is unaffected.
    const at::Tensor nan_boxes = boxes.clone();
    nan_boxes[0][2] = NAN;
    const at::Tensor pasted = ops::paste_masks(masks, nan_boxes, 40, 50);
    QCOMPARE(pasted[0].abs().max().item<float>(), 0.f);
    QVERIFY(torch::equal(pasted[1], ops::paste_masks(masks, boxes, 40, 50)[1]));
    // Half masks are computed in float.
    QCOMPARE(ops::paste_masks(masks.to(at::kHalf), boxes, 40, 50).scalar_type(), at::kFloat);

    auto expectError = [](const std::string& message, const char* needle) {
      QVERIFY2(message.find(needle) != std::string::npos,
               qPrintable(QString::fromStdString("\"" + message + "\" lacks \"") + needle + "\""));
    };
    expectError(errorOf([&] { ops::paste_masks(masks, boxes.narrow(0, 0, 1), 40, 50); }),
                "one box per mask: 2 masks, 1 boxes");
    expectError(errorOf([&] {
                  ops::paste_masks(torch::rand({2, 28, 14}), boxes, 40, 50);
                }),
                "masks must be square");
    expectError(errorOf([&] {
                  ops::paste_masks(torch::rand({2, 3, 28, 28}), boxes, 40, 50);
                }),
                "masks must be [N, M, M] or [N, 1, M, M]");
    expectError(errorOf([&] { ops::paste_masks(masks, boxes, -1, 50); }),
                "the image size must not be negative");
    expectError(errorOf([&] { ops::paste_masks(masks, boxes, 40, 50, -1); }),
                "padding must not be negative");
    expectError(errorOf([&] { ops::paste_masks(masks, boxes.to(at::kLong), 40, 50); }),
                "boxes must be float or double");
  }

  // 100 detections' masks into an 800x1216 image, both single-threaded: the same pixels as
  // torchvision (per-mask sums and counts above 0.5), and the two times side by side.
  void pasteOfHundredMasksMatchesAndTimes() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    const Dict c = parity().at("timing").toGenericDict();
    const at::Tensor masks = tensorAt(c, "masks");
    const at::Tensor boxes = tensorAt(c, "boxes");
    const int64_t h = intAt(c, "height"), w = intAt(c, "width");
    at::set_num_threads(1);
    QElapsedTimer timer;
    timer.start();
    const at::Tensor probs = ops::paste_masks(masks, boxes, h, w);
    const double ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    timer.start();
    const at::Tensor binary = ops::paste_masks_binary(masks, boxes, h, w);
    const double ms_binary = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    at::set_num_threads(2);
    const double theirs = c.at("seconds").toDouble() * 1000;
    qInfo(
        "100 masks into %lldx%lld, 1 thread: paste_masks %.1f ms, paste_masks_binary %.1f ms, "
        "torchvision's paste_masks_in_image %.1f ms (x%.1f, x%.1f)",
        static_cast<long long>(h), static_cast<long long>(w), ms, ms_binary, theirs, theirs / ms,
        theirs / ms_binary);
    const double sums = maxRelDiff(probs.to(at::kDouble).sum({1, 2}), tensorAt(c, "sums"));
    const at::Tensor above = binary.to(at::kLong).sum({1, 2});
    const int64_t count_diff = (above - tensorAt(c, "above")).abs().max().item<int64_t>();
    QVERIFY(torch::equal(above, probs.gt(0.5).sum({1, 2})));
    qInfo("per-mask sums: max rel diff %.3g; pixels above 0.5: max difference %lld per mask", sums,
          static_cast<long long>(count_diff));
    QVERIFY2(sums < 1e-6, qPrintable(QString::number(sums)));
    QVERIFY2(count_diff <= 2, qPrintable(QString::number(count_diff)));
  }

  // ---- CUDA ----

  void cudaKernelsMatchCpu() {
    if (!torch::cuda::is_available()) QSKIP(kNoGpu);
    torch::manual_seed(9);
    const at::Tensor masks = torch::rand({4, 50, 70}).gt(0.5).to(at::kByte);
    const at::Tensor rois = torch::tensor({{3.f, 4.f, 30.f, 40.f},
                                           {-10.f, 5.f, 20.f, 60.f},
                                           {10.f, 10.f, 10.5f, 10.2f},
                                           {0.f, 0.f, 90.f, 70.f}});
    const at::Tensor matched = torch::tensor({0, 3, 1, 2}, torch::kLong);
    const at::Tensor cpu = ops::mask_targets(masks, rois, matched, 28);
    const at::Tensor gpu = ops::mask_targets(masks.cuda(), rois.cuda(), matched.cuda(), 28);
    QVERIFY2(maxAbsDiff(gpu, cpu) < 1e-5, qPrintable(QString::number(maxAbsDiff(gpu, cpu))));
    QVERIFY(std::isnan(ops::mask_targets(masks.cuda(), rois.cuda(),
                                         torch::tensor({0, 3, 1, 7}, torch::kLong).cuda(), 28)[3]
                           .sum()
                           .item<float>()));
    const at::Tensor probs = torch::rand({4, 1, 28, 28});
    const at::Tensor pc = ops::paste_masks(probs, rois, 60, 80);
    const at::Tensor pg = ops::paste_masks(probs.cuda(), rois.cuda(), 60, 80);
    QVERIFY2(maxAbsDiff(pg, pc) < 1e-5, qPrintable(QString::number(maxAbsDiff(pg, pc))));
    const auto [mismatches, all_ties] = thresholdMismatches(
        ops::paste_masks_binary(probs.cuda(), rois.cuda(), 60, 80).cpu(), pc, 0.5, 1e-5);
    QVERIFY2(all_ties, qPrintable(QString::number(mismatches)));
    QCOMPARE(
        ops::paste_masks(probs.cuda().narrow(0, 0, 0), rois.cuda().narrow(0, 0, 0), 60, 80).size(0),
        int64_t{0});
  }
};

QTEST_GUILESS_MAIN(TestMaskHead)
#include "test_mask_head.moc"

// The RoI heads (engine/model: multi-level RoIAlign, box head and predictor, RoIHeads with
// the mask branch) against torchvision's, on the data roi_heads_parity.py makes (run live
// with MRCNN_PYTHON), for 91 classes at the real sizes and 7 classes on narrower features:
// MultiScaleRoIAlign's output and level of every box; eval-mode detections (boxes, scores,
// labels, mask probabilities); train-mode losses and gradients with torchvision's sample.
// Without Python: torchvision's state_dict names, the level mapping and scale inference by
// hand, background-only images, no proposals, TAO's background band (bg_thresh_lo) and the
// spec's fields.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/model/multiscale_roi_align.h"
#include "engine/model/roi_heads.h"
#include "engine/model/state_dict.h"
#include "tests/common/reference_script.h"
#include "tests/engine/parity_file.h"

namespace model = mrcnn::model;

namespace {

using Dict = mrcnn::testing::ParityDict;
using mrcnn::testing::intAt;
using mrcnn::testing::tensorAt;
using mrcnn::testing::tensorsAt;
std::array<int64_t, 2> pairAt(const c10::IValue& v) {
  const c10::List<c10::IValue> l = v.toList();
  return {l.get(0).toInt(), l.get(1).toInt()};
}

// max |a - b| / max |b|: relative to the tensor's own scale (inf on a shape mismatch).
double relError(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return INFINITY;
  if (b.numel() == 0) return 0.0;
  const at::Tensor x = a.detach().cpu().to(at::kDouble);
  const at::Tensor y = b.detach().cpu().to(at::kDouble);
  return (x - y).abs().max().item<double>() / std::max(y.abs().max().item<double>(), 1e-30);
}
double maxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return INFINITY;
  if (a.numel() == 0) return 0.0;
  return (a.detach().cpu().to(at::kDouble) - b.detach().cpu().to(at::kDouble))
      .abs()
      .max()
      .item<double>();
}
// |a - b| / |b| for scalars (losses).
double relDiff(const at::Tensor& a, const at::Tensor& b) {
  const double x = a.item<double>(), y = b.item<double>();
  return std::abs(x - y) / std::max(std::abs(y), 1e-12);
}

QString shapeOf(const at::Tensor& t) {
  QStringList s;
  for (int64_t d : t.sizes())
    s << QString::number(d);
  return "[" + s.join(", ") + "]";
}

std::vector<std::string> parameterNames(const torch::nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& item : m.named_parameters())
    names.push_back(item.key());
  return names;
}

// torchvision's roi_heads parameters of maskrcnn_resnet50_fpn, in state_dict order.
const std::vector<std::string> kTorchvisionNames = {
    "box_head.fc6.weight",
    "box_head.fc6.bias",
    "box_head.fc7.weight",
    "box_head.fc7.bias",
    "box_predictor.cls_score.weight",
    "box_predictor.cls_score.bias",
    "box_predictor.bbox_pred.weight",
    "box_predictor.bbox_pred.bias",
    "mask_head.0.0.weight",
    "mask_head.0.0.bias",
    "mask_head.1.0.weight",
    "mask_head.1.0.bias",
    "mask_head.2.0.weight",
    "mask_head.2.0.bias",
    "mask_head.3.0.weight",
    "mask_head.3.0.bias",
    "mask_predictor.conv5_mask.weight",
    "mask_predictor.conv5_mask.bias",
    "mask_predictor.mask_fcn_logits.weight",
    "mask_predictor.mask_fcn_logits.bias",
};

// A small configuration for the tests that need no torchvision.
model::RoIHeadsOptions smallOptions() {
  model::RoIHeadsOptions o;
  o.num_classes = 4;
  o.in_channels = 8;
  o.representation_size = 32;
  o.batch_size_per_image = 64;
  return o;
}

// Random FPN maps, levels 2..6, of a 64 x 96 padded batch.
std::vector<at::Tensor> smallFeatures(int64_t n, int64_t c) {
  std::vector<at::Tensor> f;
  for (int l = 2; l <= 6; ++l)
    f.push_back(torch::randn({n, c, (64 + (1 << l) - 1) >> l, (96 + (1 << l) - 1) >> l}));
  return f;
}

// An elliptic mask inside each box, [M, h, w].
at::Tensor masksFor(const at::Tensor& boxes, int64_t h, int64_t w) {
  at::Tensor m = torch::zeros({boxes.size(0), h, w}, at::kByte);
  for (int64_t i = 0; i < boxes.size(0); ++i) {
    const auto x1 = boxes[i][0].item<int64_t>(), y1 = boxes[i][1].item<int64_t>();
    const auto x2 = boxes[i][2].item<int64_t>(), y2 = boxes[i][3].item<int64_t>();
    m[i].slice(0, y1 + 1, y2 - 1).slice(1, x1 + 1, x2 - 1).fill_(1);
  }
  return m;
}

}  // namespace

class TestRoIHeads : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString python_;
  QString parityError_;
  c10::IValue parity_;

  std::vector<Dict> cases() const {
    std::vector<Dict> out;
    for (const c10::IValue& v : parity_.toGenericDict().at("cases").toList())
      out.push_back(v.toGenericDict());
    return out;
  }

  // Skip when no Python is configured; fail when it is and the script did not deliver.
  bool parityReady() {
    if (!parityError_.isEmpty()) QTest::qFail(qPrintable(parityError_), __FILE__, __LINE__);
    return parityError_.isEmpty();
  }

  static model::ImageSizes sizesOf(const Dict& c) {
    model::ImageSizes s;
    s.padded = pairAt(c.at("padded"));
    for (const c10::IValue& v : c.at("image_sizes").toList())
      s.images.push_back(pairAt(v));
    return s;
  }

  // RoIHeads as maskrcnn_resnet50_fpn configures them, with the case's sizes and weights.
  static model::RoIHeads torchvisionHeads(const Dict& c) {
    model::RoIHeadsOptions o;
    o.num_classes = intAt(c, "num_classes");
    o.in_channels = intAt(c, "in_channels");
    o.representation_size = intAt(c, "representation_size");
    model::RoIHeads heads(o);
    const Dict weights = c.at("weights").toGenericDict();
    torch::NoGradGuard no_grad;
    for (auto& item : heads->named_parameters())
      item.value().copy_(weights.at(item.key()).toTensor());
    return heads;
  }

 private slots:
  void initTestCase() {
    at::set_num_threads(2);  // as the script: the same reduction order
    python_ = qEnvironmentVariable("MRCNN_PYTHON");
    if (python_.isEmpty()) return;
    const QString out = dir_.filePath("roi_heads_parity.pt");
    QString log;
    QElapsedTimer timer;
    timer.start();
    parityError_ =
        mrcnn::testing::runReferenceScript("tests/engine/roi_heads_parity.py", {out}, &log);
    if (!parityError_.isEmpty()) return;
    qInfo("%s (%.1f s)", qPrintable(log), static_cast<double>(timer.elapsed()) / 1000.0);
    parityError_ = mrcnn::testing::readParityFile(out, &parity_);
  }

  // The state_dict loader maps roi_heads.* by these names: they must be torchvision's.
  void parameterNamesAreTorchvisions() {
    model::RoIHeads heads(smallOptions());
    const std::vector<std::string> ours = parameterNames(*heads);
    QCOMPARE(ours, kTorchvisionNames);
    const model::StateDict state = model::stateDictOf(*heads, "roi_heads.");
    QCOMPARE(state.front().first, std::string("roi_heads.box_head.fc6.weight"));
    QCOMPARE(state.size(), kTorchvisionNames.size());  // no buffers
    // torchvision's names before MaskRCNNHeads version 2 (mask_fcn1..4).
    const auto legacy = heads->legacyParameterNames();
    const auto has = [&](const std::string& old_name, const std::string& new_name) {
      return std::find(legacy.begin(), legacy.end(), std::pair(old_name, new_name)) != legacy.end();
    };
    QVERIFY(has("mask_head.mask_fcn1.weight", "mask_head.0.0.weight"));
    QVERIFY(has("mask_head.mask_fcn4.bias", "mask_head.3.0.bias"));
    for (const auto& [old_name, new_name] : legacy)
      QVERIFY2(std::find(ours.begin(), ours.end(), new_name) != ours.end(), new_name.c_str());
    // Faster R-CNN: the box branch only.
    model::RoIHeadsOptions boxes_only = smallOptions();
    boxes_only.with_masks = false;
    QCOMPARE(parameterNames(*model::RoIHeads(boxes_only)),
             std::vector<std::string>(kTorchvisionNames.begin(), kTorchvisionNames.begin() + 8));
    QVERIFY(model::RoIHeads(boxes_only)->legacyParameterNames().empty());

    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    for (const Dict& c : cases()) {
      std::vector<std::string> theirs;
      for (const auto& item : c.at("weights").toGenericDict())
        theirs.push_back(item.key().toStringRef());
      QCOMPARE(theirs, kTorchvisionNames);
      const model::RoIHeads full = torchvisionHeads(c);  // shapes match (copy_ would throw)
      QCOMPARE(parameterNames(*full), theirs);
    }
  }

  // FPN eq. 1 by hand: the boundaries land on the level above (eps), the rest floors, and
  // boxes beyond the pyramid clamp to its ends.
  void levelMappingByHand() {
    const model::MultiScaleRoIAlign pool;
    const at::Tensor boxes = torch::tensor({{0.f, 0.f, 196.f, 256.f},    // sqrt(area) 224: k 4
                                            {0.f, 0.f, 196.f, 255.f},    // just below: k 3
                                            {10.f, 10.f, 108.f, 138.f},  // 112: k 3
                                            {10.f, 10.f, 59.f, 74.f},    // 56: k 2
                                            {0.f, 0.f, 4.f, 4.f},        // k 0: clamped to 2
                                            {0.f, 0.f, 900.f, 900.f}});  // k 6: clamped to 5
    const at::Tensor levels = pool.levels({boxes.slice(0, 0, 2), boxes.slice(0, 2)}, 2, 5);
    QCOMPARE(levels.scalar_type(), at::kLong);
    QVERIFY2(torch::equal(levels, torch::tensor({2, 1, 1, 0, 0, 3}, at::kLong)),
             qPrintable(QString::fromStdString(c10::str(levels))));

    // Scales from the padded size: 1/4 .. 1/32 for levels 2..5 (P6's map is not pooled).
    const std::vector<at::Tensor> maps = {
        torch::zeros({1, 1, 72, 88}), torch::zeros({1, 1, 36, 44}), torch::zeros({1, 1, 18, 22}),
        torch::zeros({1, 1, 9, 11})};
    const model::PyramidScales s = model::MultiScaleRoIAlign::inferScales(maps, {288, 352});
    QCOMPARE(s.scales, (std::vector<double>{0.25, 0.125, 0.0625, 0.03125}));
    QCOMPARE(s.k_min, 2);
    QCOMPARE(s.k_max, 5);
    QVERIFY_THROWS_EXCEPTION(
        c10::Error, model::MultiScaleRoIAlign::inferScales({maps[0], maps[2]}, {288, 352}));

    // A box pooled from the level it maps to: a constant map per level gives its level back.
    std::vector<at::Tensor> constant;
    for (int l = 0; l < 4; ++l)
      constant.push_back(torch::full({1, 1, 72 >> l, 88 >> l}, static_cast<float>(l)));
    const at::Tensor pooled =
        model::MultiScaleRoIAlign(model::MultiScaleRoIAlignOptions{.output_size = 2})(
            constant, {boxes.slice(0, 0, 4)}, {288, 352});
    QCOMPARE(pooled.sizes(), (at::IntArrayRef{4, 1, 2, 2}));
    QVERIFY(torch::allclose(pooled.amax({1, 2, 3}), torch::tensor({2.f, 1.f, 1.f, 0.f})));
    QVERIFY(torch::allclose(pooled.amin({1, 2, 3}), torch::tensor({2.f, 1.f, 1.f, 0.f})));
  }

  void multiScaleRoIAlignMatchesTorchvision() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    for (const Dict& c : cases()) {
      const std::vector<at::Tensor> features = tensorsAt(c, "features");
      const std::vector<at::Tensor> maps(features.begin(), features.begin() + 4);
      const std::vector<at::Tensor> proposals = tensorsAt(c, "proposals");
      const std::array<int64_t, 2> padded = sizesOf(c).padded;
      const int64_t channels = intAt(c, "channels_saved");

      const model::MultiScaleRoIAlign pool7;
      const at::Tensor levels = pool7.levels(proposals, 2, 5);
      QVERIFY2(torch::equal(levels, tensorAt(c, "levels")),
               qPrintable(QString("%1 of %2 boxes on another level")
                              .arg((levels != tensorAt(c, "levels")).sum().item<int64_t>())
                              .arg(levels.numel())));
      const at::Tensor counts = at::bincount(levels, {}, 4);
      QVERIFY2((counts.slice(0, 0, 3) > 0).all().item<bool>(), "levels 2..4 must all be used");

      struct Pooling {
        const char* key;
        model::MultiScaleRoIAlignOptions options;
        std::vector<at::Tensor> maps;
      };
      const Pooling poolings[] = {
          {"pooled7", {}, maps},
          {"pooled14", {.output_size = 14}, maps},
          {"pooled_single", {.output_size = 5, .sampling_ratio = 0}, {features[1]}},
      };
      for (const Pooling& p : poolings) {
        torch::NoGradGuard no_grad;
        const at::Tensor ours =
            model::MultiScaleRoIAlign(p.options)(p.maps, proposals, padded).narrow(1, 0, channels);
        const double d = relError(ours, tensorAt(c, p.key));
        qInfo("%lld classes, %s: %s, max |diff| / max %.3g",
              static_cast<long long>(intAt(c, "num_classes")), p.key, qPrintable(shapeOf(ours)), d);
        QVERIFY2(d <= 1e-5, qPrintable(QString("%1: %2").arg(p.key).arg(d)));
      }
    }
  }

  void evalDetectionsMatchTorchvision() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    for (const Dict& c : cases()) {
      model::RoIHeads heads = torchvisionHeads(c);
      heads->eval();
      torch::NoGradGuard no_grad;
      QElapsedTimer timer;
      timer.start();
      const model::RoIHeadsOutput out =
          heads->forward(tensorsAt(c, "features"), tensorsAt(c, "proposals"), sizesOf(c));
      const double ms = static_cast<double>(timer.elapsed());
      QVERIFY(!out.losses.has_value());
      const std::vector<at::Tensor> boxes = tensorsAt(c, "det_boxes"),
                                    scores = tensorsAt(c, "det_scores"),
                                    labels = tensorsAt(c, "det_labels"),
                                    masks = tensorsAt(c, "det_masks");
      QCOMPARE(out.detections.size(), boxes.size());
      for (size_t i = 0; i < boxes.size(); ++i) {
        const model::Detections& d = out.detections[i];
        const QString what = QString("%1 classes, image %2").arg(intAt(c, "num_classes")).arg(i);
        QVERIFY2(d.labels.sizes() == labels[i].sizes(),
                 qPrintable(what + ": " + shapeOf(d.labels) + " detections, torchvision " +
                            shapeOf(labels[i])));
        QVERIFY2(torch::equal(d.labels, labels[i]), qPrintable(what + ": labels differ"));
        const double db = maxAbsDiff(d.boxes, boxes[i]), ds = maxAbsDiff(d.scores, scores[i]),
                     dm = maxAbsDiff(d.masks, masks[i]);
        qInfo("%s: %lld detections (%.0f ms), max |diff| boxes %.3g px, scores %.3g, masks %.3g",
              qPrintable(what), static_cast<long long>(d.labels.size(0)), ms, db, ds, dm);
        QVERIFY2(db <= 1e-2, qPrintable(what + QString(": boxes %1 px").arg(db)));
        QVERIFY2(ds <= 1e-4, qPrintable(what + QString(": scores %1").arg(ds)));
        QVERIFY2(dm <= 1e-4, qPrintable(what + QString(": masks %1 ") + shapeOf(d.masks)));
      }
    }
  }

  // Train mode with torchvision's sample: the three losses, and gradients through all of
  // them into the heads' parameters and the features (MultiScaleRoIAlign's backward).
  void trainLossesAndGradientsMatchTorchvision() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    for (const Dict& c : cases()) {
      model::RoIHeads heads = torchvisionHeads(c);
      heads->train();
      model::RoIHeadsTargets targets;
      targets.boxes = tensorsAt(c, "gt_boxes");
      targets.labels = tensorsAt(c, "gt_labels");
      targets.masks = tensorsAt(c, "gt_masks");
      const std::vector<at::Tensor> pos = tensorsAt(c, "sampled_positive");
      const std::vector<at::Tensor> neg = tensorsAt(c, "sampled_negative");
      for (size_t i = 0; i < pos.size(); ++i)
        targets.sampled.push_back({pos[i], neg[i]});
      std::vector<at::Tensor> features = tensorsAt(c, "features");
      for (size_t l = 0; l < 4; ++l)
        features[l] = features[l].clone().requires_grad_(true);

      const model::RoIHeadsOutput out =
          heads->forward(features, tensorsAt(c, "proposals"), sizesOf(c), &targets);
      QVERIFY(out.detections.empty());
      QVERIFY(out.losses.has_value());
      const model::RoIHeadsLosses& losses = *out.losses;
      const double dc = relDiff(losses.classifier, tensorAt(c, "loss_classifier"));
      const double db = relDiff(losses.box_reg, tensorAt(c, "loss_box_reg"));
      const double dm = relDiff(losses.mask, tensorAt(c, "loss_mask"));
      qInfo(
          "%lld classes: loss_classifier %.6f (rel diff %.3g), loss_box_reg %.6f (%.3g), "
          "loss_mask %.6f (%.3g)",
          static_cast<long long>(intAt(c, "num_classes")), losses.classifier.item<double>(), dc,
          losses.box_reg.item<double>(), db, losses.mask.item<double>(), dm);
      QVERIFY2(dc <= 1e-4, qPrintable(QString("classifier loss rel diff %1").arg(dc)));
      QVERIFY2(db <= 1e-4, qPrintable(QString("box loss rel diff %1").arg(db)));
      QVERIFY2(dm <= 1e-4, qPrintable(QString("mask loss rel diff %1").arg(dm)));
      QVERIFY(torch::equal(losses.box_reg_weighted, losses.box_reg));  // weights 1
      QVERIFY(torch::equal(losses.mask_weighted, losses.mask));

      (losses.classifier + losses.box_reg + losses.mask).backward();
      const int64_t rows = intAt(c, "rows_saved");
      const auto params = heads->named_parameters();
      for (const auto& item : c.at("grads").toGenericDict()) {
        const std::string name = item.key().toStringRef();
        const at::Tensor grad = params[name].grad();
        QVERIFY2(grad.defined(), name.c_str());
        const double d =
            relError(grad.narrow(0, 0, std::min(rows, grad.size(0))), item.value().toTensor());
        qInfo("  grad %s: max |diff| / max |grad| %.3g", name.c_str(), d);
        QVERIFY2(d <= 1e-4, qPrintable(QString("%1: %2").arg(name.c_str()).arg(d)));
      }
      const std::vector<at::Tensor> feature_grads = tensorsAt(c, "feature_grads");
      const int64_t channels = intAt(c, "channels_saved");
      for (size_t l = 0; l < feature_grads.size(); ++l) {
        QVERIFY2(features[l].grad().defined(),
                 qPrintable(QString("no gradient at level %1").arg(l + 2)));
        const double d = relError(features[l].grad().narrow(1, 0, channels), feature_grads[l]);
        qInfo("  grad of features, level %zu: max |diff| / max |grad| %.3g", l + 2, d);
        QVERIFY2(d <= 1e-4, qPrintable(QString("features %1: %2").arg(l).arg(d)));
      }
      QVERIFY(!features[4].grad().defined());  // P6 is not pooled
    }
  }

  // An image without ground truth: all its proposals are background, it adds nothing to the
  // box and mask losses; a batch of such images trains the classifier alone.
  void backgroundImagesAreAllNegative() {
    torch::manual_seed(1);
    model::RoIHeads heads(smallOptions(), at::make_generator<at::CPUGeneratorImpl>(3));
    heads->train();
    const std::vector<at::Tensor> features = smallFeatures(2, 8);
    const model::ImageSizes sizes{{64, 96}, {{60, 90}, {64, 80}}};
    const at::Tensor proposals =
        torch::tensor({{2.f, 2.f, 30.f, 40.f}, {10.f, 5.f, 50.f, 35.f}, {40.f, 20.f, 88.f, 58.f}});

    const at::Tensor gt = torch::tensor({{10.f, 5.f, 50.f, 35.f}});
    const auto [matched, labels] =
        heads->assignTargets(proposals, torch::zeros({0, 4}), torch::zeros({0}, at::kLong));
    QVERIFY(torch::equal(labels, torch::zeros({3}, at::kLong)));
    QVERIFY(torch::equal(matched, torch::zeros({3}, at::kLong)));

    model::RoIHeadsTargets one;  // image 0 background, image 1 one object
    one.boxes = {torch::zeros({0, 4}), gt};
    one.labels = {torch::zeros({0}, at::kLong), torch::tensor({2}, at::kLong)};
    one.masks = {torch::zeros({0, 60, 90}, at::kByte), masksFor(gt, 64, 80)};
    const model::RoIHeadsOutput a = heads->forward(features, {proposals, proposals}, sizes, &one);
    QVERIFY(a.losses->box_reg.item<double>() > 0.0);  // from image 1's positives
    QVERIFY(std::isfinite(a.losses->mask.item<double>()) && a.losses->mask.item<double>() > 0.0);

    model::RoIHeadsTargets none;
    none.boxes = {torch::zeros({0, 4}), torch::zeros({0, 4})};
    none.labels = {torch::zeros({0}, at::kLong), torch::zeros({0}, at::kLong)};
    none.masks = {torch::zeros({0, 60, 90}, at::kByte), torch::zeros({0, 64, 80}, at::kByte)};
    const model::RoIHeadsOutput b = heads->forward(features, {proposals, proposals}, sizes, &none);
    QCOMPARE(b.losses->box_reg.item<double>(), 0.0);
    QCOMPARE(b.losses->mask.item<double>(), 0.0);
    const double cls = b.losses->classifier.item<double>();
    QVERIFY(std::isfinite(cls) && cls > 0.0);
    (b.losses->classifier + b.losses->box_reg + b.losses->mask).backward();
    QVERIFY(heads->boxPredictor()
                ->named_parameters()["cls_score.weight"]
                .grad()
                .abs()
                .sum()
                .item<double>() > 0.0);

    // Targets are checked at the boundary.
    model::RoIHeadsTargets bad = one;
    bad.labels[1] = torch::tensor({4}, at::kLong);  // num_classes 4: labels 1..3
    QVERIFY_THROWS_EXCEPTION(c10::Error,
                             heads->forward(features, {proposals, proposals}, sizes, &bad));
    QVERIFY_THROWS_EXCEPTION(c10::Error, heads->forward(features, {proposals, proposals}, sizes));
  }

  // No proposals: no detections (of the right shapes) in inference; in training the ground
  // truth is the only RoI; with neither, zero losses instead of NaN.
  void noProposals() {
    torch::manual_seed(2);
    model::RoIHeads heads(smallOptions(), at::make_generator<at::CPUGeneratorImpl>(4));
    const std::vector<at::Tensor> features = smallFeatures(2, 8);
    const model::ImageSizes sizes{{64, 96}, {{60, 90}, {64, 80}}};
    const at::Tensor empty = torch::zeros({0, 4});
    heads->eval();
    {
      torch::NoGradGuard no_grad;
      const model::RoIHeadsOutput out = heads->forward(features, {empty, empty}, sizes);
      QCOMPARE(out.detections.size(), size_t{2});
      for (const model::Detections& d : out.detections) {
        QCOMPARE(d.boxes.sizes(), (at::IntArrayRef{0, 4}));
        QCOMPARE(d.scores.sizes(), (at::IntArrayRef{0}));
        QCOMPARE(d.labels.scalar_type(), at::kLong);
        QCOMPARE(d.masks.sizes(), (at::IntArrayRef{0, 1, 28, 28}));
      }
    }
    heads->train();
    const at::Tensor gt = torch::tensor({{10.f, 5.f, 50.f, 35.f}, {40.f, 20.f, 88.f, 58.f}});
    model::RoIHeadsTargets targets;
    targets.boxes = {gt, empty};
    targets.labels = {torch::tensor({1, 3}, at::kLong), torch::zeros({0}, at::kLong)};
    targets.masks = {masksFor(gt, 60, 90), torch::zeros({0, 64, 80}, at::kByte)};
    const model::RoIHeadsOutput out = heads->forward(features, {empty, empty}, sizes, &targets);
    // The two ground-truth boxes of image 0 are the only RoIs, both positive.
    QVERIFY(std::isfinite(out.losses->classifier.item<double>()));
    QVERIFY(std::isfinite(out.losses->box_reg.item<double>()));
    QVERIFY(out.losses->mask.item<double>() > 0.0);

    targets.boxes[0] = empty;
    targets.labels[0] = torch::zeros({0}, at::kLong);
    targets.masks[0] = torch::zeros({0, 60, 90}, at::kByte);
    const model::RoIHeadsOutput nothing = heads->forward(features, {empty, empty}, sizes, &targets);
    QCOMPARE(nothing.losses->classifier.item<double>(), 0.0);
    QCOMPARE(nothing.losses->box_reg.item<double>(), 0.0);
    QCOMPARE(nothing.losses->mask.item<double>(), 0.0);
  }

  // mask_head_layers sets the mask head's convolutions (count and widths); the predictor's
  // transposed convolution keeps the last width; training and inference run on them.
  void maskHeadLayersSetTheMaskBranch() {
    torch::manual_seed(3);
    model::RoIHeadsOptions o = smallOptions();
    o.mask_head_layers = {16, 6};
    model::RoIHeads heads(o, at::make_generator<at::CPUGeneratorImpl>(5));
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& item : heads->named_parameters())
      shapes[item.key()] = item.value().sizes().vec();
    QCOMPARE(shapes.at("mask_head.0.0.weight"), (std::vector<int64_t>{16, 8, 3, 3}));
    QCOMPARE(shapes.at("mask_head.1.0.weight"), (std::vector<int64_t>{6, 16, 3, 3}));
    QVERIFY(!shapes.count("mask_head.2.0.weight"));
    QCOMPARE(shapes.at("mask_predictor.conv5_mask.weight"), (std::vector<int64_t>{6, 6, 2, 2}));
    QCOMPARE(shapes.at("mask_predictor.mask_fcn_logits.weight"),
             (std::vector<int64_t>{4, 6, 1, 1}));

    const std::vector<at::Tensor> features = smallFeatures(1, 8);
    const model::ImageSizes sizes{{64, 96}, {{60, 90}}};
    const at::Tensor gt = torch::tensor({{10.f, 5.f, 50.f, 35.f}});
    model::RoIHeadsTargets targets;
    targets.boxes = {gt};
    targets.labels = {torch::tensor({2}, at::kLong)};
    targets.masks = {masksFor(gt, 60, 90)};
    heads->train();
    const model::RoIHeadsOutput out =
        heads->forward(features, {torch::zeros({0, 4})}, sizes, &targets);
    out.losses->mask.backward();
    QVERIFY(out.losses->mask.item<double>() > 0.0);
    QVERIFY(heads->named_parameters()["mask_head.1.0.weight"].grad().abs().sum().item<double>() >
            0);
    heads->eval();
    torch::NoGradGuard no_grad;
    const model::RoIHeadsOutput inferred = heads->forward(features, {gt}, sizes);
    QCOMPARE(inferred.detections[0].masks.size(2), int64_t{28});

    o.mask_head_layers.clear();
    QVERIFY_THROWS_EXCEPTION(c10::Error, model::RoIHeads{o});
  }

  // IoU >= fg: the class; [bg_lo, bg_hi): background; otherwise ignored (-1), so that
  // bg_thresh_lo > 0 keeps proposals that overlap nothing out of the sample.
  void backgroundBandIgnoresLowOverlaps() {
    const at::Tensor gt = torch::tensor({{0.f, 0.f, 10.f, 10.f}});
    const at::Tensor gt_labels = torch::tensor({3}, at::kLong);
    const at::Tensor proposals = torch::tensor({{0.f, 0.f, 10.f, 10.f},      // IoU 1
                                                {0.f, 0.f, 10.f, 6.f},       // 0.6
                                                {0.f, 0.f, 10.f, 4.5f},      // 0.45
                                                {0.f, 0.f, 10.f, 3.f},       // 0.3
                                                {0.f, 0.f, 10.f, 0.5f},      // 0.05
                                                {20.f, 20.f, 30.f, 30.f}});  // 0
    auto labelsWith = [&](double fg, double bg_hi, double bg_lo) {
      model::RoIHeadsOptions o = smallOptions();
      o.fg_iou_thresh = fg;
      o.bg_iou_thresh_hi = bg_hi;
      o.bg_iou_thresh_lo = bg_lo;
      return model::RoIHeads(o)->assignTargets(proposals, gt, gt_labels).second;
    };
    // torchvision's 0.5 / 0.5 / 0: everything below 0.5 is background.
    QVERIFY(torch::equal(labelsWith(0.5, 0.5, 0.0), torch::tensor({3, 3, 0, 0, 0, 0}, at::kLong)));
    // TAO-style band [0.1, 0.5).
    QVERIFY(
        torch::equal(labelsWith(0.5, 0.5, 0.1), torch::tensor({3, 3, 0, 0, -1, -1}, at::kLong)));
    // A gap between background and foreground: [0.4, 0.7) ignored.
    QVERIFY(
        torch::equal(labelsWith(0.7, 0.4, 0.0), torch::tensor({3, -1, -1, 0, 0, 0}, at::kLong)));

    // In training, ignored proposals are never sampled: with every random proposal below
    // bg_lo, the sample is the ground truth alone.
    torch::manual_seed(5);
    model::RoIHeadsOptions o = smallOptions();
    o.bg_iou_thresh_lo = 0.1;
    model::RoIHeads heads(o, at::make_generator<at::CPUGeneratorImpl>(6));
    heads->train();
    const at::Tensor far = torch::tensor({{50.f, 40.f, 60.f, 50.f}, {70.f, 10.f, 90.f, 30.f}});
    const std::vector<at::Tensor> features = smallFeatures(1, 8);
    model::RoIHeadsTargets targets;
    targets.boxes = {gt};
    targets.labels = {gt_labels};
    targets.masks = {masksFor(gt, 64, 96)};
    const model::RoIHeadsOutput out =
        heads->forward(features, {far}, {{64, 96}, {{64, 96}}}, &targets);
    model::RoIHeadsOptions lax = o;
    lax.bg_iou_thresh_lo = 0.0;
    model::RoIHeads heads0(lax, at::make_generator<at::CPUGeneratorImpl>(6));
    torch::NoGradGuard no_grad;
    for (auto& item : heads0->named_parameters())
      item.value().copy_(heads->named_parameters()[item.key()]);
    heads0->train();
    const model::RoIHeadsOutput out0 =
        heads0->forward(features, {far}, {{64, 96}, {{64, 96}}}, &targets);
    // The box loss is summed over the positives (the ground truth alone, both times) and
    // divided by the sample size: 1 RoI with bg_lo 0.1, 3 with bg_lo 0.
    const double box = out.losses->box_reg.item<double>(),
                 box0 = out0.losses->box_reg.item<double>();
    QVERIFY2(box > 0.0 && std::abs(box - 3.0 * box0) <= 1e-6 * box,
             qPrintable(QString("box loss %1 with bg_lo 0.1, %2 with 0").arg(box).arg(box0)));
  }

  void specFieldsMapToOptions() {
    model::RoIHeadsSpecFields spec;
    spec.num_classes = 5;
    spec.fg_thresh = 0.6f;
    spec.bg_thresh_hi = 0.4f;
    spec.bg_thresh_lo = 0.1f;
    spec.batch_size_per_im = 256;
    spec.fg_fraction = 0.5f;
    spec.fast_rcnn_mlp_head_dim = 512;
    spec.bbox_reg_weights = {10.f, 10.f, 2.f, 2.f};
    spec.fast_rcnn_box_loss_weight = 2.0f;
    spec.mrcnn_weight_loss_mask = 0.5f;
    spec.mrcnn_resolution = 56;
    spec.test_detections_per_image = 50;
    spec.test_nms = 0.6f;
    spec.test_score_thresh = 0.3f;
    spec.mask_head_layers = {64, 32};
    const model::RoIHeadsOptions o = model::toRoIHeadsOptions(spec);
    QCOMPARE(o.num_classes, int64_t{5});
    QCOMPARE(o.fg_iou_thresh, static_cast<double>(0.6f));
    QCOMPARE(o.bg_iou_thresh_hi, static_cast<double>(0.4f));
    QCOMPARE(o.bg_iou_thresh_lo, static_cast<double>(0.1f));
    QCOMPARE(o.batch_size_per_image, int64_t{256});
    QCOMPARE(o.positive_fraction, 0.5);
    QCOMPARE(o.representation_size, int64_t{512});
    QCOMPARE(o.bbox_reg_weights, (std::array<double, 4>{10.0, 10.0, 2.0, 2.0}));
    QCOMPARE(o.box_loss_weight, 2.0);
    QCOMPARE(o.mask_loss_weight, 0.5);
    QCOMPARE(o.mask_roi_size, int64_t{28});
    QCOMPARE(o.detections_per_image, int64_t{50});
    QCOMPARE(o.nms_thresh, static_cast<double>(0.6f));
    QCOMPARE(o.score_thresh, static_cast<double>(0.3f));
    QCOMPARE(o.mask_head_layers, (std::vector<int64_t>{64, 32}));
    // The defaults are torchvision's maskrcnn_resnet50_fpn.
    const model::RoIHeadsOptions d = model::toRoIHeadsOptions({});
    const model::RoIHeadsOptions tv;
    QCOMPARE(d.fg_iou_thresh, tv.fg_iou_thresh);
    QCOMPARE(d.bg_iou_thresh_hi, tv.bg_iou_thresh_hi);
    QCOMPARE(d.bg_iou_thresh_lo, tv.bg_iou_thresh_lo);
    QCOMPARE(d.mask_roi_size, tv.mask_roi_size);
    QCOMPARE(d.batch_size_per_image, tv.batch_size_per_image);
    QCOMPARE(d.positive_fraction, tv.positive_fraction);
    QCOMPARE(d.bbox_reg_weights, tv.bbox_reg_weights);
    QCOMPARE(d.mask_head_layers, tv.mask_head_layers);
    QCOMPARE(d.score_thresh, static_cast<double>(0.05f));

    // Out of order thresholds and an odd resolution are refused, naming the field.
    model::RoIHeadsSpecFields bad = spec;
    bad.bg_thresh_lo = 0.5f;
    try {
      model::toRoIHeadsOptions(bad);
      QFAIL("bg_thresh_lo > bg_thresh_hi accepted");
    } catch (const c10::Error& e) {
      QVERIFY2(std::string(e.what()).find("bg_thresh_lo") != std::string::npos, e.what());
    }
    bad = spec;
    bad.mrcnn_resolution = 27;
    QVERIFY_THROWS_EXCEPTION(c10::Error, model::toRoIHeadsOptions(bad));
    model::RoIHeadsOptions wrong = smallOptions();
    wrong.bg_iou_thresh_hi = 0.6;  // above fg 0.5
    QVERIFY_THROWS_EXCEPTION(c10::Error, (void)model::RoIHeads(wrong));
  }
};

QTEST_GUILESS_MAIN(TestRoIHeads)
#include "test_roi_heads.moc"

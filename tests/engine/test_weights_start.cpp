// Pretrained starts (engine/setup/weights): files written by weights_start_oracle.py with seeded
// torchvision models (run live with MRCNN_PYTHON).
//  - A torchvision ResNet ImageNet classifier's state_dict loads into the backbone's body: its
//    feature maps on a real photo equal torchvision's ResNet with the same file (within 1e-5),
//    fc is ignored, the FPN, RPN and heads keep their initial values, the report says so in
//    one line; a classifier of another depth is refused naming both depths.
//  - COCO-shaped Mask R-CNN weights into a 3-class "person, car, dog" model: the class-dependent
//    tensors are initialised with one warning naming them, the rows of person, car and dog (and
//    the background's) equal COCO's rows, everything else equals the file; a class COCO does not
//    have keeps its initial row; any other shape mismatch stays an error.
#include <torch/torch.h>

#include <QTemporaryDir>
#include <QtTest>
#include <map>
#include <set>
#include <string>

#include "engine/model/mask_rcnn.h"
#include "engine/model/state_dict.h"
#include "engine/setup/weights.h"
#include "tests/common/reference_script.h"
#include "tests/engine/tensor_compare.h"

namespace model = mrcnn::model;
namespace engine = mrcnn::engine;
using mrcnn::testing::relError;

namespace {

std::map<std::string, at::Tensor> byName(const model::StateDict& state) {
  std::map<std::string, at::Tensor> out;
  for (const auto& [k, v] : state)
    out[k] = v;
  return out;
}

// The spec's model for the ImageNet cases: torchvision's detection ResNet with batch norm
// frozen at eps 1e-5 (ImageNet's BatchNorm2d in eval mode).
model::MaskRCNNOptions imageNetOptions(int depth, bool frozen_bn = true) {
  model::MaskRCNNOptions o = model::MaskRCNNOptions::torchvisionResNet50FPN(/*num_classes=*/5);
  o.backbone.resnet.depth = depth;
  o.backbone.resnet.frozen_bn = frozen_bn;
  o.backbone.resnet.frozen_bn_eps = 1e-5;
  return o;
}

template <typename F>
QString errorOf(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

// A model built as loadModel builds it, from the same seed: what "initial values" are.
model::MaskRCNN freshModel(const model::MaskRCNNOptions& options) {
  at::manual_seed(7);
  return model::MaskRCNN(options);
}

}  // namespace

class TestWeightsStart : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString oracleError_;
  std::map<std::string, at::Tensor> expected_;

  bool oracleReady() {
    if (!oracleError_.isEmpty()) QTest::qFail(qPrintable(oracleError_), __FILE__, __LINE__);
    return oracleError_.isEmpty();
  }
  std::string file(const char* name) const { return dir_.filePath(name).toStdString(); }
  at::Tensor expected(const std::string& key) const {
    const auto it = expected_.find(key);
    if (it == expected_.end()) throw std::runtime_error("no expected value " + key);
    return it->second;
  }
  model::MaskRCNN loaded(const model::MaskRCNNOptions& options, const char* name,
                         const engine::WeightsOptions& weights, engine::WeightsReport* report) {
    at::manual_seed(7);
    return engine::loadModel(options, std::filesystem::path(file(name)), weights, report);
  }

 private slots:
  void initTestCase() {
    at::set_num_threads(2);
    QVERIFY(dir_.isValid());
    if (qEnvironmentVariable("MRCNN_PYTHON").isEmpty()) {
      oracleError_ = "MRCNN_PYTHON is not set: no torchvision to compare with";
      return;
    }
    QString log;
    oracleError_ = mrcnn::testing::runReferenceScript("tests/engine/weights_start_oracle.py",
                                                      {dir_.path()}, &log);
    if (!oracleError_.isEmpty()) return;
    qInfo("%s", qPrintable(log));
    try {
      expected_ = byName(model::readStateDict(file("expected.pt")));
    } catch (const std::exception& e) {
      oracleError_ = QString("cannot read expected.pt: ") + e.what();
    }
  }

  // ---- ImageNet backbones ----

  void imageNetResNet50BodyEqualsTorchvisionOnAPhoto() {
    if (!oracleReady()) return;
    engine::WeightsReport report;
    model::MaskRCNN net = loaded(imageNetOptions(50), "resnet50_imagenet.pt", {}, &report);
    QCOMPARE(QString::fromStdString(report.kind), QString("torchvision ImageNet ResNet-50"));
    QVERIFY(report.backbone_only);
    QCOMPARE(report.ignored, 2);  // fc.weight, fc.bias
    QVERIFY(report.initialised.empty());
    QVERIFY(report.warnings.empty());
    // Every tensor of the body (frozen batch norm: no num_batches_tracked) came from the file.
    const auto file_state = model::readStateDict(file("resnet50_imagenet.pt"));
    int body_tensors = 0;
    for (const auto& [k, v] : file_state)
      body_tensors += k.rfind("fc.", 0) != 0 && k.find("num_batches_tracked") == std::string::npos;
    QCOMPARE(report.loaded, body_tensors);
    const QString line = QString::fromStdString(report.summary("r50.pt"));
    QVERIFY2(!line.contains('\n'), qPrintable(line));
    QVERIFY2(line.startsWith(
                 "r50.pt (torchvision ImageNet ResNet-50): " + QString::number(body_tensors) +
                 " tensors into the backbone's ResNet body, fc ignored (2 tensors); the FPN, "
                 "the RPN and the RoI heads keep their initial values"),
             qPrintable(line));

    net->eval();
    torch::NoGradGuard no_grad;
    const std::vector<at::Tensor> out = net->backbone()->body()->forward(expected("input/photo"));
    QCOMPARE(out.size(), size_t{4});
    for (size_t i = 0; i < 4; ++i) {
      const at::Tensor ref = expected("r50/photo/" + std::to_string(i));
      QCOMPARE(mrcnn::testing::shapeOf(out[i]), mrcnn::testing::shapeOf(ref));
      const double err = relError(out[i], ref);
      qInfo("layer%zu %s: relative error %.2e", i + 1, qPrintable(mrcnn::testing::shapeOf(ref)),
            err);
      QVERIFY2(err <= 1e-5, qPrintable(QString("layer%1: relative error %2").arg(i + 1).arg(err)));
    }
  }

  void imageNetLeavesEverythingButTheBodyAtItsInitialValues() {
    if (!oracleReady()) return;
    const model::MaskRCNNOptions options = imageNetOptions(50);
    model::MaskRCNN net = loaded(options, "resnet50_imagenet.pt", {}, nullptr);
    model::MaskRCNN fresh = freshModel(options);
    const auto initial = byName(fresh->torchvisionState());
    const auto file_state = byName(model::readStateDict(file("resnet50_imagenet.pt")));
    int body = 0, rest = 0;
    for (const auto& [key, value] : net->torchvisionState()) {
      if (key.rfind("backbone.body.", 0) == 0) {
        const auto it = file_state.find(key.substr(std::string("backbone.body.").size()));
        QVERIFY2(it != file_state.end(), key.c_str());
        QVERIFY2(torch::equal(value, it->second.to(value.dtype())), key.c_str());
        ++body;
      } else {
        QVERIFY2(torch::equal(value, initial.at(key)), key.c_str());
        ++rest;
      }
    }
    QVERIFY(body > 0 && rest > 0);
  }

  void imageNetResNet18WithTrainableBatchNorm() {
    if (!oracleReady()) return;
    // BasicBlocks, and batch norm trainable (freeze_bn false): the file's counters load too.
    engine::WeightsReport report;
    model::MaskRCNN net =
        loaded(imageNetOptions(18, /*frozen_bn=*/false), "resnet18_imagenet.pt", {}, &report);
    QCOMPARE(QString::fromStdString(report.kind), QString("torchvision ImageNet ResNet-18"));
    net->eval();
    torch::NoGradGuard no_grad;
    const std::vector<at::Tensor> out = net->backbone()->body()->forward(expected("input/random"));
    for (size_t i = 0; i < 4; ++i) {
      const double err = relError(out[i], expected("r18/random/" + std::to_string(i)));
      QVERIFY2(err <= 1e-5, qPrintable(QString("layer%1: relative error %2").arg(i + 1).arg(err)));
    }
  }

  void imageNetOfAnotherDepthIsRefused() {
    if (!oracleReady()) return;
    const QString error =
        errorOf([&] { loaded(imageNetOptions(50), "resnet18_imagenet.pt", {}, nullptr); });
    QVERIFY2(error.contains(
                 "resnet18_imagenet.pt: an ImageNet ResNet-18 classifier, but the spec's model is "
                 "a ResNet-50 (maskrcnn_config.nlayers): set nlayers: 18, or start from "
                 "torchvision:resnet50"),
             qPrintable(error));
  }

  void imageNetFilesAreRecognisedByTheirKeys() {
    if (!oracleReady()) return;
    QCOMPARE(engine::imageNetResNetDepth(model::readStateDict(file("resnet50_imagenet.pt"))), 50);
    QCOMPARE(engine::imageNetResNetDepth(model::readStateDict(file("resnet18_imagenet.pt"))), 18);
    QCOMPARE(engine::imageNetResNetDepth(model::readStateDict(file("coco_shaped.pt"))), 0);
    // A classifier without its fc (saved for a backbone) is still one.
    model::StateDict no_fc;
    for (auto& [k, v] : model::readStateDict(file("resnet18_imagenet.pt")))
      if (k.rfind("fc.", 0) != 0) no_fc.emplace_back(k, v);
    QCOMPARE(engine::imageNetResNetDepth(no_fc), 18);
  }

  // ---- Fine-tuning to other classes ----

  void cocoRowsStartPersonCarDog() {
    if (!oracleReady()) return;
    model::MaskRCNNOptions options =
        model::MaskRCNNOptions::torchvisionResNet50FPN(/*num_classes=*/4);
    engine::WeightsOptions weights;
    weights.class_names = {"background", "person", "car", "dog"};
    engine::WeightsReport report;
    model::MaskRCNN net = loaded(options, "coco_shaped.pt", weights, &report);

    // One warning, naming the class-dependent tensors.
    QCOMPARE(report.warnings.size(), size_t{1});
    const QString warning = QString::fromStdString(report.warnings[0].message);
    qInfo("%s", qPrintable(warning));
    QCOMPARE(QString::fromStdString(report.warnings[0].code),
             QString("weights_classes_initialised"));
    const std::set<std::string> class_keys = {"roi_heads.box_predictor.cls_score.weight",
                                              "roi_heads.box_predictor.cls_score.bias",
                                              "roi_heads.box_predictor.bbox_pred.weight",
                                              "roi_heads.box_predictor.bbox_pred.bias",
                                              "roi_heads.mask_predictor.mask_fcn_logits.weight",
                                              "roi_heads.mask_predictor.mask_fcn_logits.bias"};
    QCOMPARE(std::set<std::string>(report.initialised.begin(), report.initialised.end()),
             class_keys);
    for (const std::string& key : class_keys)
      QVERIFY2(warning.contains(QString::fromStdString(key)), key.c_str());
    QVERIFY2(warning.contains("its predictor has 91 classes and the model 4"), qPrintable(warning));
    QCOMPARE(report.file_classes, int64_t{91});

    // The mapping: each name to torchvision's COCO label of it (the oracle's).
    QCOMPARE(report.class_rows.size(), size_t{3});
    const char* names[] = {"person", "car", "dog"};
    for (size_t i = 0; i < 3; ++i) {
      const engine::ClassRowSource& r = report.class_rows[i];
      QCOMPARE(r.label, static_cast<int64_t>(i + 1));
      QCOMPARE(QString::fromStdString(r.name), QString(names[i]));
      QCOMPARE(r.file_label, expected(std::string("coco_labels/") + names[i]).item<int64_t>());
      QCOMPARE(QString::fromStdString(r.file_name), QString(names[i]));
    }
    const QString line = QString::fromStdString(report.summary("coco.pt"));
    QVERIFY2(
        line.contains("rows from COCO's: 1 person <- 1 person; 2 car <- 3 car; 3 dog <- 18 dog"),
        qPrintable(line));

    // The rows equal COCO's; every other tensor equals the file's.
    const auto file_state = byName(model::readStateDict(file("coco_shaped.pt")));
    const auto ours = byName(net->torchvisionState());
    const std::vector<int64_t> rows = {0, expected("coco_labels/person").item<int64_t>(),
                                       expected("coco_labels/car").item<int64_t>(),
                                       expected("coco_labels/dog").item<int64_t>()};
    for (const std::string& key : class_keys) {
      const int64_t k = key.find("bbox_pred") != std::string::npos ? 4 : 1;
      const at::Tensor mine = ours.at(key), theirs = file_state.at(key);
      QCOMPARE(mine.size(0), 4 * k);
      for (int64_t label = 0; label < 4; ++label) {
        QVERIFY2(torch::equal(mine.narrow(0, label * k, k),
                              theirs.narrow(0, rows[static_cast<size_t>(label)] * k, k)),
                 qPrintable(QString::fromStdString(key) + " label " + QString::number(label)));
      }
    }
    for (const auto& [key, value] : ours) {
      if (class_keys.count(key)) continue;
      const auto it = file_state.find(key);
      if (it == file_state.end()) continue;  // the frozen batch norms' counters
      QVERIFY2(torch::equal(value, it->second.to(value.dtype())), key.c_str());
    }
  }

  void classesWithoutCocoNamesKeepTheirInitialRows() {
    if (!oracleReady()) return;
    const model::MaskRCNNOptions options =
        model::MaskRCNNOptions::torchvisionResNet50FPN(/*num_classes=*/4);
    engine::WeightsOptions weights;
    weights.class_names = {"background", "Person", "widget", "motorbike"};  // case and VOC's name
    engine::WeightsReport report;
    model::MaskRCNN net = loaded(options, "coco_shaped.pt", weights, &report);
    QCOMPARE(report.class_rows.size(), size_t{2});
    QCOMPARE(report.class_rows[1].file_label, int64_t{4});  // motorbike <- motorcycle
    const auto initial = byName(freshModel(options)->torchvisionState());
    const auto ours = byName(net->torchvisionState());
    const std::string cls = "roi_heads.box_predictor.cls_score.weight";
    QVERIFY(torch::equal(ours.at(cls)[2], initial.at(cls)[2]));   // widget: initial
    QVERIFY(!torch::equal(ours.at(cls)[1], initial.at(cls)[1]));  // person: COCO's

    // No names at all: every class-dependent tensor keeps its initial values.
    engine::WeightsReport plain;
    model::MaskRCNN unnamed = loaded(options, "coco_shaped.pt", {}, &plain);
    QVERIFY(plain.class_rows.empty());
    QCOMPARE(plain.warnings.size(), size_t{1});
    const auto unnamed_state = byName(unnamed->torchvisionState());
    for (const std::string& key : plain.initialised)
      QVERIFY2(torch::equal(unnamed_state.at(key), initial.at(key)), key.c_str());
  }

  void otherShapeMismatchesStayErrors() {
    if (!oracleReady()) return;
    // Another box head width as well as other classes: not a change of classes alone.
    model::MaskRCNNOptions options =
        model::MaskRCNNOptions::torchvisionResNet50FPN(/*num_classes=*/4);
    options.roi_heads.representation_size = 512;
    const QString error = errorOf([&] { loaded(options, "coco_shaped.pt", {}, nullptr); });
    QVERIFY2(error.contains("shape mismatch for roi_heads.box_head.fc6.weight"), qPrintable(error));
    QVERIFY2(error.contains("shape mismatch for roi_heads.box_predictor.cls_score.weight"),
             qPrintable(error));
    // The same classes and another width: the class tensors are not the reason.
    model::MaskRCNNOptions same_classes = model::MaskRCNNOptions::torchvisionResNet50FPN(91);
    same_classes.roi_heads.representation_size = 512;
    const QString error91 = errorOf([&] { loaded(same_classes, "coco_shaped.pt", {}, nullptr); });
    QVERIFY2(error91.contains("shape mismatch for roi_heads.box_head.fc6.weight"),
             qPrintable(error91));
    // Where untrained heads make no sense (evaluation, inference): other classes are an error.
    engine::WeightsOptions strict;
    strict.new_classes = false;
    const QString strict_error = errorOf([&] {
      loaded(model::MaskRCNNOptions::torchvisionResNet50FPN(4), "coco_shaped.pt", strict, nullptr);
    });
    QVERIFY2(strict_error.contains(
                 "shape mismatch for roi_heads.box_predictor.cls_score.weight: the file "
                 "has [91, 1024], the model expects [4, 1024]"),
             qPrintable(strict_error));
  }

  void sameClassesLoadEverything() {
    if (!oracleReady()) return;
    engine::WeightsReport report;
    loaded(model::MaskRCNNOptions::torchvisionResNet50FPN(91), "coco_shaped.pt", {}, &report);
    QVERIFY(report.initialised.empty());
    QVERIFY(report.warnings.empty());
    QCOMPARE(QString::fromStdString(report.kind), QString("torchvision state_dict"));
  }
};

QTEST_GUILESS_MAIN(TestWeightsStart)
#include "test_weights_start.moc"

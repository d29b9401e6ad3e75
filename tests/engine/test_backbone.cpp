// The backbone (engine/model: ResNet, FPN, frozen batch norm, state_dicts): equal to
// torchvision's on the data of backbone_parity.py (run live with MRCNN_PYTHON): features of
// every pyramid level on a real photo and on random inputs, in eval and train mode; the same
// trainable parameters per freeze_blocks; torch.save files read, ours written back and
// loaded by torchvision with strict=True; clear errors for files that do not fit.
#include <torch/torch.h>

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/model/backbone.h"
#include "engine/model/frozen_batch_norm.h"
#include "engine/model/resnet.h"
#include "engine/model/state_dict.h"
#include "tests/common/reference_script.h"

namespace model = mrcnn::model;

namespace {

// max |a - b| / max |b|: the error relative to the map's magnitude.
double relError(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return INFINITY;
  const at::Tensor x = a.to(at::kDouble);
  const at::Tensor y = b.to(at::kDouble);
  const double scale = std::max(y.abs().max().item<double>(), 1e-30);
  return (x - y).abs().max().item<double>() / scale;
}

QString shapeOf(const at::Tensor& t) {
  QStringList s;
  for (int64_t d : t.sizes())
    s << QString::number(d);
  return "[" + s.join(", ") + "]";
}

model::BackboneOptions optionsOf(const QString& kind) {
  model::BackboneOptions o;
  o.resnet.freeze_blocks = model::freezeBlocksForTrainableLayers(3);
  if (kind == "r50_bn") {
    o.resnet.frozen_bn = false;
    o.resnet.freeze_blocks = {};  // maskrcnn_resnet50_fpn without weights trains all layers
  } else if (kind == "r50_frozen") {
    o.resnet.frozen_bn_eps = 0.0;  // as torchvision runs its COCO_V1 weights
  } else if (kind == "r18") {
    o.resnet.depth = 18;
  } else if (kind == "r18_l3") {
    o.resnet.depth = 18;
    o.min_level = 3;
  } else if (kind == "r101") {
    o.resnet.depth = 101;
  }
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

}  // namespace

class TestBackbone : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString python_;
  QString parityError_;
  std::map<std::string, at::Tensor> expected_;

  bool parityReady() {
    if (!parityError_.isEmpty()) QTest::qFail(qPrintable(parityError_), __FILE__, __LINE__);
    return parityError_.isEmpty();
  }
  std::string file(const QString& name) const { return dir_.filePath(name).toStdString(); }
  at::Tensor expected(const std::string& key) const {
    const auto it = expected_.find(key);
    if (it == expected_.end()) throw std::runtime_error("no expected value " + key);
    return it->second;
  }

  model::BackboneWithFPN loaded(const QString& kind) {
    model::BackboneWithFPN backbone(optionsOf(kind));
    model::LoadOptions load;
    load.prefix = "backbone.";
    load.source = file(kind + ".pt");
    backbone->loadTorchvisionState(model::readStateDict(load.source), load);
    backbone->eval();
    return backbone;
  }

  // Runs backbone_parity.py with `args`; empty when it succeeded, else why not.
  QString runScript(const QStringList& args, int timeout_ms) {
    QString log;
    const QString error = mrcnn::testing::runReferenceScript("tests/engine/backbone_parity.py",
                                                             args, &log, timeout_ms);
    if (error.isEmpty()) qInfo("%s", qPrintable(log));
    return error;
  }

 private slots:
  void initTestCase() {
    at::set_num_threads(2);
    QVERIFY(dir_.isValid());
    python_ = qEnvironmentVariable("MRCNN_PYTHON");
    if (python_.isEmpty()) return;
    parityError_ = runScript({"make", dir_.path()}, 300000);
    if (!parityError_.isEmpty()) return;
    try {
      for (auto& [key, value] : model::readStateDict(file("expected.pt")))
        expected_[key] = value;
    } catch (const std::exception& e) {
      parityError_ = QString("cannot read expected.pt: ") + e.what();
    }
  }

  // ---- Reading torch.save files ----

  void readsAWholeMaskRCNNStateDict() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    // torch.save(model.state_dict()): an OrderedDict with _metadata, which LibTorch's own
    // pickle_load turns into None.
    const model::StateDict state = model::readStateDict(file("r50_bn.pt"));
    QCOMPARE(QString::fromStdString(state.front().first), QString("backbone.body.conv1.weight"));
    std::set<std::string> keys;
    for (const auto& [k, v] : state)
      keys.insert(k);
    QCOMPARE(keys.size(), state.size());
    QVERIFY(keys.count("backbone.body.layer4.2.bn3.num_batches_tracked"));
    QVERIFY(keys.count("backbone.fpn.layer_blocks.3.0.bias"));
    QVERIFY(keys.count("roi_heads.mask_predictor.mask_fcn_logits.weight"));
    const at::Tensor w = state.front().second;
    QCOMPARE(shapeOf(w), QString("[64, 3, 7, 7]"));
    QCOMPARE(w.scalar_type(), at::kFloat);
  }

  // Tensors that are views of a storage (offset, strides, shared), other dtypes, and
  // pickle protocol 4 (torch.save(..., pickle_protocol=4)).
  void readsViewsAndDtypes() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    std::map<std::string, at::Tensor> views;
    for (auto& [k, v] : model::readStateDict(file("views.pt")))
      views[k] = v;
    QCOMPARE(views.size(), size_t{4});
    const at::Tensor base = torch::arange(12, torch::kFloat).reshape({3, 4});
    QVERIFY(torch::equal(views.at("sliced"), base.slice(1, 1)));
    QVERIFY(torch::equal(views.at("transposed"), base.t()));
    QCOMPARE(views.at("long").scalar_type(), at::kLong);
    QVERIFY(torch::equal(views.at("long"), torch::arange(5) - 2));
    QCOMPARE(views.at("half").scalar_type(), at::kHalf);
    QVERIFY(torch::equal(views.at("half"), base.to(at::kHalf)[1]));
  }

  // ---- Parity with torchvision ----

  void featuresMatchTorchvision_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("input");
    QTest::addColumn<int>("levels");
    QTest::newRow("resnet50 fpn BatchNorm2d, photo") << "r50_bn"
                                                     << "photo" << 5;
    QTest::newRow("resnet50 fpn BatchNorm2d, random batch") << "r50_bn"
                                                            << "random" << 5;
    QTest::newRow("resnet50 fpn frozen eps 0, photo") << "r50_frozen"
                                                      << "photo" << 5;
    QTest::newRow("resnet50 fpn frozen eps 0, random") << "r50_frozen"
                                                       << "random" << 5;
    QTest::newRow("resnet18 fpn, old FPN key names, random") << "r18"
                                                             << "random" << 5;
    QTest::newRow("resnet18 fpn min_level 3, random") << "r18_l3"
                                                      << "random" << 4;
    QTest::newRow("resnet101 fpn, random") << "r101"
                                           << "random" << 5;
  }
  void featuresMatchTorchvision() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    QFETCH(QString, kind);
    QFETCH(QString, input);
    QFETCH(int, levels);
    model::BackboneWithFPN backbone = loaded(kind);
    torch::NoGradGuard no_grad;
    const std::vector<at::Tensor> out = backbone->forward(expected("input/" + input.toStdString()));
    QCOMPARE(static_cast<int>(out.size()), levels);
    QStringList errors;
    for (int i = 0; i < levels; ++i) {
      const at::Tensor ref =
          expected(kind.toStdString() + "/" + input.toStdString() + "/" + std::to_string(i));
      QCOMPARE(shapeOf(out[static_cast<size_t>(i)]), shapeOf(ref));
      const double err = relError(out[static_cast<size_t>(i)], ref);
      errors << QString::number(err, 'g', 2);
      QVERIFY2(err < 1e-4, qPrintable(QString("level %1: relative error %2").arg(i).arg(err)));
    }
    qInfo("relative error per level: %s", qPrintable(errors.join(", ")));
  }

  // Trainable BatchNorm2d in train mode: batch statistics in the output, running statistics
  // updated with momentum 0.1, as torchvision.
  void trainModeMatchesTorchvision() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    model::BackboneWithFPN backbone = loaded("r50_bn");
    backbone->train();
    torch::NoGradGuard no_grad;
    const std::vector<at::Tensor> out = backbone->forward(expected("input/random"));
    QCOMPARE(out.size(), size_t{5});
    for (size_t i = 0; i < out.size(); ++i) {
      const double err = relError(out[i], expected("r50_bn/train/" + std::to_string(i)));
      QVERIFY2(err < 1e-4, qPrintable(QString("level %1: relative error %2").arg(i).arg(err)));
    }
    std::map<std::string, at::Tensor> state;
    for (auto& [k, v] : backbone->torchvisionState(""))
      state[k] = v;
    for (const std::string key : {"body.bn1.running_mean", "body.layer4.2.bn3.running_var",
                                  "body.layer2.0.downsample.1.running_mean"}) {
      const double err = relError(state.at(key), expected("r50_bn/train_state/" + key));
      QVERIFY2(err < 1e-5, qPrintable(QString::fromStdString(key) + ": " + QString::number(err)));
    }
  }

  // max_level 5: the same levels without torchvision's extra "pool".
  void maxLevel5HasNoPoolLevel() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    model::BackboneOptions o = optionsOf("r18");
    o.max_level = 5;
    model::BackboneWithFPN backbone(o);
    model::LoadOptions load;
    load.prefix = "backbone.";
    backbone->loadTorchvisionState(model::readStateDict(file("r18.pt")), load);
    backbone->eval();
    torch::NoGradGuard no_grad;
    const auto out = backbone->forward(expected("input/random"));
    QCOMPARE(out.size(), size_t{4});
    for (size_t i = 0; i < out.size(); ++i)
      QVERIFY(relError(out[i], expected("r18/random/" + std::to_string(i))) < 1e-4);
  }

  // freeze_blocks {0..4-k} freezes exactly what torchvision's trainable_layers k does.
  void freezeBlocksMatchTrainableLayers() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    for (int k = 0; k <= 5; ++k) {
      model::BackboneOptions o;
      o.resnet.frozen_bn = false;
      o.resnet.freeze_blocks = model::freezeBlocksForTrainableLayers(k);
      model::BackboneWithFPN backbone(o);
      QStringList ours;
      for (const auto& p : backbone->named_parameters())
        if (p.value().requires_grad()) ours << QString::fromStdString(p.key());
      QFile f(dir_.filePath(QString("trainable_%1.txt").arg(k)));
      QVERIFY(f.open(QIODevice::ReadOnly));
      QStringList theirs = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
      ours.sort();
      theirs.sort();
      QCOMPARE(ours, theirs);
    }
    // Frozen batch norm: no parameters at all, only buffers.
    model::BackboneWithFPN frozen(model::BackboneOptions{});
    for (const auto& p : frozen->named_parameters())
      QVERIFY2(p.key().find(".bn") == std::string::npos, p.key().c_str());
  }

  // ---- Writing state_dicts back ----

  // BatchNorm2d and FrozenBatchNorm2d backbones, and one read with the old FPN names: each
  // written in torchvision's names, loaded by torchvision strictly (one Python run for all),
  // and read back by us.
  void torchvisionLoadsOurStateDictStrictly() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    QStringList checks = {"check"};
    for (const QString kind : {"r50_bn", "r50_frozen", "r18"}) {
      model::BackboneWithFPN backbone = loaded(kind);
      const QString ours = dir_.filePath("ours_" + kind + ".pt");
      model::writeStateDict(backbone->torchvisionState("backbone."), ours.toStdString());
      checks << ours << kind << dir_.filePath(kind + ".pt");

      model::BackboneWithFPN again(optionsOf(kind));
      model::LoadOptions load;
      load.prefix = "backbone.";
      const model::LoadReport report =
          again->loadTorchvisionState(model::readStateDict(ours.toStdString()), load);
      QVERIFY(report.missing.empty() && report.unexpected.empty());
      std::map<std::string, at::Tensor> a, b;
      for (auto& [k, v] : backbone->torchvisionState())
        a[k] = v;
      for (auto& [k, v] : again->torchvisionState())
        b[k] = v;
      QCOMPARE(a.size(), b.size());
      for (auto& [k, v] : a)
        QVERIFY2(torch::equal(v, b.at(k)), k.c_str());
    }
    const QString error = runScript(checks, 120000);
    QVERIFY2(error.isEmpty(), qPrintable(error));
  }

  // ---- Errors ----

  void filesThatAreNotStateDictsAreNamed() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    const std::string garbage = file("garbage.pt");
    std::ofstream(garbage) << "hello, not a checkpoint\n";
    QString e = errorOf([&] { model::readStateDict(garbage); });
    QVERIFY2(e.contains(QString::fromStdString(garbage)) && e.contains("not a file of torch.save"),
             qPrintable(e));
    e = errorOf([&] { model::readStateDict(file("missing.pt")); });
    QVERIFY2(e.contains("cannot open"), qPrintable(e));
    e = errorOf([&] { model::readStateDict(file("nested.pt")); });
    QVERIFY2(e.contains("holds a dict with keys [model, epoch]") && e.contains("not a state_dict"),
             qPrintable(e));
    e = errorOf([&] { model::readStateDict(file("list.pt")); });
    QVERIFY2(e.contains("holds a list"), qPrintable(e));
    e = errorOf([&] { model::readStateDict(file("legacy.pt")); });
    QVERIFY2(e.contains("legacy format"), qPrintable(e));
  }

  void keysThatDoNotFitAreNamed() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    model::StateDict state = model::readStateDict(file("r50_frozen.pt"));
    model::LoadOptions load;
    load.prefix = "backbone.";
    load.source = "r50_frozen.pt";
    model::BackboneWithFPN backbone(optionsOf("r50_frozen"));

    model::StateDict missing;
    for (auto& kv : state)
      if (kv.first != "backbone.body.layer1.0.conv2.weight") missing.push_back(kv);
    QString e = errorOf([&] { backbone->loadTorchvisionState(missing, load); });
    QVERIFY2(e.startsWith("r50_frozen.pt: does not fit the model") &&
                 e.contains("missing key backbone.body.layer1.0.conv2.weight (expected shape "
                            "[64, 64, 3, 3])"),
             qPrintable(e));

    model::StateDict extra = state;
    extra.emplace_back("backbone.body.layer5.0.conv1.weight", torch::zeros({3}));
    extra.emplace_back("roi_heads.box_head.fc6.weight", torch::zeros({3}));  // not ours: fine
    e = errorOf([&] { backbone->loadTorchvisionState(extra, load); });
    QVERIFY2(e.contains("unexpected key backbone.body.layer5.0.conv1.weight [3]") &&
                 !e.contains("roi_heads"),
             qPrintable(e));
    load.strict = false;
    const model::LoadReport report = backbone->loadTorchvisionState(extra, load);
    QCOMPARE(report.unexpected.size(), size_t{1});
    load.strict = true;

    // A ResNet-18 file for a ResNet-50 model: shapes named with both sides.
    e = errorOf(
        [&] { backbone->loadTorchvisionState(model::readStateDict(file("r18.pt")), load); });
    QVERIFY2(e.contains("shape mismatch for backbone.body.layer1.0.conv1.weight: the file has "
                        "[64, 64, 3, 3], the model expects [64, 64, 1, 1]"),
             qPrintable(e));
    QVERIFY2(e.contains("missing key backbone.body.layer1.0.conv3.weight"), qPrintable(e));

    // A trainable-BatchNorm file into a frozen model: num_batches_tracked is dropped as
    // torchvision's FrozenBatchNorm2d does; the reverse keeps the counter.
    model::LoadReport r =
        backbone->loadTorchvisionState(model::readStateDict(file("r50_bn.pt")), load);
    QVERIFY(r.unexpected.empty() && r.missing.empty());
    model::BackboneWithFPN trainable(optionsOf("r50_bn"));
    r = trainable->loadTorchvisionState(state, load);
    QVERIFY(r.unexpected.empty() && r.missing.empty());
  }

  void invalidOptionsAreRefused() {
    model::BackboneOptions o;
    o.resnet.depth = 12;
    QVERIFY(errorOf([&] { model::BackboneWithFPN b(o); }).contains("unsupported ResNet depth 12"));
    o = {};
    o.resnet.freeze_blocks = {0, 5};
    QVERIFY(errorOf([&] { model::BackboneWithFPN b(o); }).contains("freeze_blocks: block 5"));
    o = {};
    o.min_level = 1;
    QVERIFY(errorOf([&] { model::BackboneWithFPN b(o); }).contains("min_level"));
    o = {};
    o.max_level = 7;
    QVERIFY(errorOf([&] { model::BackboneWithFPN b(o); }).contains("max_level"));
  }

  // ---- Without torchvision ----

  // ResNet-10 (TAO's): one BasicBlock per stage.
  void resnet10HasOneBasicBlockPerStage() {
    model::BackboneOptions o;
    o.resnet.depth = 10;
    model::BackboneWithFPN backbone(o);
    std::set<std::string> keys;
    for (auto& [k, v] : backbone->torchvisionState(""))
      keys.insert(k);
    QVERIFY(keys.count("body.layer1.0.conv2.weight"));
    QVERIFY(!keys.count("body.layer1.0.conv3.weight"));
    QVERIFY(!keys.count("body.layer1.1.conv1.weight"));
    QVERIFY(keys.count("body.layer2.0.downsample.0.weight"));
    QVERIFY(!keys.count("body.layer1.0.downsample.0.weight"));
    QVERIFY(keys.count("fpn.inner_blocks.0.0.weight"));
    backbone->eval();
    torch::NoGradGuard no_grad;
    const auto out = backbone->forward(torch::randn({1, 3, 64, 96}));
    QCOMPARE(out.size(), size_t{5});
    const std::vector<QString> shapes = {"[1, 256, 16, 24]", "[1, 256, 8, 12]", "[1, 256, 4, 6]",
                                         "[1, 256, 2, 3]", "[1, 256, 1, 2]"};
    for (size_t i = 0; i < out.size(); ++i)
      QCOMPARE(shapeOf(out[i]), shapes[i]);
  }

  // forward keeps its scale and shift while the buffers stay as they are; each way of changing
  // them (in place, in place under inference mode, new storage, eps, a move to another dtype)
  // gives the freshly computed result, bit for bit.
  void frozenBatchNormFollowsItsBuffers() {
    torch::manual_seed(3);
    model::FrozenBatchNorm2d bn(6, 1e-5);
    const at::Tensor x = torch::randn({2, 6, 5, 7});
    const auto fresh = [&](const at::Tensor& in) {
      torch::NoGradGuard no_grad;
      return in * bn->scale() + bn->shift();
    };
    const auto same = [&](const char* what) {
      const at::Tensor got = bn->forward(x.to(bn->weight.scalar_type()));
      const at::Tensor want = fresh(x.to(bn->weight.scalar_type()));
      QVERIFY2(got.equal(want), what);
    };
    same("defaults");
    {
      torch::NoGradGuard no_grad;
      bn->weight.uniform_(0.5, 1.5);
      bn->running_var.uniform_(0.5, 2.0);
    }
    same("weight and running_var changed in place");
    {
      c10::InferenceMode inference;
      bn->running_mean.normal_(0, 0.1);
      bn->bias.normal_(0, 0.1);
      same("running_mean and bias changed in place under inference mode");
    }
    bn->running_var.set_data(torch::rand({6}) + 0.5);
    same("running_var given new storage (set_data)");
    bn->eps = 1e-3;
    same("eps changed");
    bn->to(at::kDouble);
    same("moved to float64");

    bn->to(at::kFloat);
    // A recomputation writes into the tensors handed out before (a CUDA graph reads them at
    // their address): a backward still to run on the old values fails loudly.
    {
      const at::Tensor leaf = x.clone().requires_grad_(true);
      const at::Tensor y = bn->forward(leaf);
      {
        torch::NoGradGuard no_grad;
        bn->running_var.uniform_(0.5, 2.0);
      }
      same("running_var changed between a forward and its backward");
      QVERIFY_THROWS_EXCEPTION(c10::Error, y.sum().backward());
    }

    // Computed under inference mode, then used in training: the backward can use it.
    bn->eps = 1e-4;
    {
      c10::InferenceMode inference;
      (void)bn->forward(x);
    }
    const at::Tensor leaf = x.clone().requires_grad_(true);
    bn->forward(leaf).sum().backward();
    QVERIFY(leaf.grad().equal(bn->scale().expand_as(x)));
  }

  void foldedBatchNormEqualsUnfolded() {
    torch::manual_seed(7);
    model::FrozenBatchNorm2d bn(8, 1e-5);
    bn->weight.uniform_(0.5, 1.5);
    bn->bias.normal_(0, 0.1);
    bn->running_mean.normal_(0, 0.1);
    bn->running_var.uniform_(0.5, 2.0);
    const at::Tensor w = torch::randn({8, 4, 3, 3});
    const at::Tensor x = torch::randn({2, 4, 10, 12});
    const model::FoldedConv f = model::foldIntoConv(w, at::Tensor(), *bn);
    const at::Tensor unfolded = bn->forward(torch::conv2d(x, w, at::Tensor(), 1, 1));
    QVERIFY(relError(torch::conv2d(x, f.weight, f.bias, 1, 1), unfolded) < 1e-5);

    // The whole body, random statistics.
    model::BackboneOptions o;
    o.resnet.depth = 50;
    model::BackboneWithFPN backbone(o);
    {
      torch::NoGradGuard no_grad;
      for (auto& m : backbone->modules()) {
        if (auto* b = m->as<model::FrozenBatchNorm2dImpl>()) {
          b->weight.uniform_(0.5, 1.5);
          b->bias.normal_(0, 0.1);
          b->running_mean.normal_(0, 0.1);
          b->running_var.uniform_(0.5, 2.0);
        }
      }
    }
    backbone->eval();
    torch::NoGradGuard no_grad;
    const at::Tensor images = torch::randn({1, 3, 96, 128});
    const auto before = backbone->forward(images);
    QCOMPARE(backbone->body()->foldFrozenBatchNorm(), 53);  // stem + 16 blocks x 3 + 4 projections
    QVERIFY(backbone->body()->folded());
    const auto after = backbone->forward(images);
    for (size_t i = 0; i < before.size(); ++i) {
      const double err = relError(after[i], before[i]);
      QVERIFY2(err < 1e-5, qPrintable(QString("level %1: %2").arg(i).arg(err)));
    }
    backbone->train();
    QVERIFY(!backbone->body()->folded());
  }
};

QTEST_GUILESS_MAIN(TestBackbone)
#include "test_backbone.moc"

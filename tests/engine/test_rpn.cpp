// The RPN (engine/model: anchors, head, matcher, sampler, proposals, losses) against
// torchvision's, on the data rpn_parity.py makes (run live with MRCNN_PYTHON): the same
// anchors (exactly), head outputs, proposals in eval and train mode (same boxes, same
// order), losses and head gradients with the same anchor sample; the Matcher on quality
// matrices with ties; TAO-style anchors against an independent computation of TAO's
// formula; and the sampler's counts and seeding.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/model/anchor_generator.h"
#include "engine/model/counted_indices.h"
#include "engine/model/matcher.h"
#include "engine/model/rpn.h"
#include "engine/model/rpn_head.h"
#include "engine/model/sampler.h"
#include "engine/ops/box_iou.h"
#include "engine/runtime/sync_counter.h"
#include "tests/common/reference_script.h"
#include "tests/engine/parity_file.h"

namespace model = mrcnn::model;
namespace ops = mrcnn::ops;

namespace {

using Dict = c10::Dict<c10::IValue, c10::IValue>;

at::Tensor tensorAt(const Dict& d, const char* key) {
  return d.at(key).toTensor();
}
double doubleAt(const Dict& d, const char* key) {
  const c10::IValue v = d.at(key);
  return v.isDouble() ? v.toDouble() : static_cast<double>(v.toInt());
}
std::vector<at::Tensor> tensorsAt(const Dict& d, const char* key) {
  std::vector<at::Tensor> out;
  for (const c10::IValue& v : d.at(key).toList())
    out.push_back(v.toTensor());
  return out;
}
std::array<int64_t, 2> pairAt(const c10::IValue& v) {
  const c10::List<c10::IValue> l = v.toList();
  return {l.get(0).toInt(), l.get(1).toInt()};
}

// max |a - b| / max(1, |b|); infinite on a shape mismatch.
double maxRelDiff(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return INFINITY;
  if (a.numel() == 0) return 0.0;
  const at::Tensor x = a.detach().cpu().to(at::kDouble);
  const at::Tensor y = b.detach().cpu().to(at::kDouble);
  return ((x - y).abs() / y.abs().clamp_min(1.0)).max().item<double>();
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

// The RPN as maskrcnn_resnet50_fpn configures it, with the head's weights of the parity data.
model::RegionProposalNetwork torchvisionRpn(const Dict& weights) {
  model::RPNHead head(model::RPNHeadOptions{});
  torch::NoGradGuard no_grad;
  for (auto& item : head->named_parameters()) {
    item.value().copy_(weights.at(item.key()).toTensor());
  }
  return model::RegionProposalNetwork(model::AnchorGenerator(model::AnchorOptions::torchvision()),
                                      head, model::RPNOptions{});
}

// The sampler tests' two images: 30 positives, 1000 negatives and 70 ignored; 490 positives
// and 10 negatives.
struct SamplerLabels {
  at::Tensor few_pos, many_pos;
};
SamplerLabels samplerLabels() {
  SamplerLabels l{torch::zeros({1100}), torch::ones({500})};
  l.few_pos.narrow(0, 0, 30).fill_(1.0);
  l.few_pos.narrow(0, 1030, 70).fill_(-1.0);
  l.many_pos.narrow(0, 0, 10).fill_(0.0);
  return l;
}

// torchvision's counts at 256 an image, half positive at most, and only elements of the
// right label: few positives: all 30, the rest negatives up to 256; many: 128 and all 10.
void checkSamplerCounts(const std::vector<model::SampledMasks>& a, const SamplerLabels& l) {
  QCOMPARE(a[0].positive.sum().item<int64_t>(), 30);
  QCOMPARE(a[0].negative.sum().item<int64_t>(), 226);
  QVERIFY(torch::equal(a[0].positive.to(at::kBool), l.few_pos == 1));
  QCOMPARE((a[0].negative.to(at::kBool) & (l.few_pos != 0)).sum().item<int64_t>(), 0);
  QCOMPARE(a[1].positive.sum().item<int64_t>(), 128);
  QCOMPARE(a[1].negative.sum().item<int64_t>(), 10);
  QCOMPARE((a[1].positive.to(at::kBool) & (l.many_pos != 1)).sum().item<int64_t>(), 0);
  QCOMPARE(a[0].positive.scalar_type(), at::kByte);
}

}  // namespace

class TestRpn : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString python_;
  QString parityError_;
  c10::IValue parity_;

  Dict parity() const { return parity_.toGenericDict(); }
  Dict rpnCase() const { return parity().at("rpn").toGenericDict(); }

  // Skip when no Python is configured; fail when it is and the script did not deliver.
  bool parityReady() {
    if (!parityError_.isEmpty()) QTest::qFail(qPrintable(parityError_), __FILE__, __LINE__);
    return parityError_.isEmpty();
  }

  model::ImageSizes sizesOf(const Dict& c) const {
    model::ImageSizes s;
    s.padded = pairAt(c.at("padded"));
    for (const c10::IValue& v : c.at("image_sizes").toList())
      s.images.push_back(pairAt(v));
    return s;
  }

  // Same boxes within tol pixels, in the same order.
  void compareProposals(const std::vector<at::Tensor>& ours, const std::vector<at::Tensor>& theirs,
                        const char* what) {
    QCOMPARE(ours.size(), theirs.size());
    for (size_t i = 0; i < ours.size(); ++i) {
      QVERIFY2(ours[i].sizes() == theirs[i].sizes(),
               qPrintable(QString("%1, image %2: %3 proposals, torchvision %4")
                              .arg(what)
                              .arg(i)
                              .arg(shapeOf(ours[i]), shapeOf(theirs[i]))));
      const double d = maxAbsDiff(ours[i], theirs[i]);
      qInfo("%s, image %zu: %lld proposals, max |diff| %.3g px", what, i,
            static_cast<long long>(ours[i].size(0)), d);
      QVERIFY2(d < 1e-4,
               qPrintable(QString("%1, image %2: max |diff| %3 px").arg(what).arg(i).arg(d)));
    }
  }

 private slots:
  void initTestCase() {
    at::set_num_threads(2);  // as the script: the same reduction order in the convolutions
    python_ = qEnvironmentVariable("MRCNN_PYTHON");
    if (python_.isEmpty()) return;
    const QString out = dir_.filePath("rpn_parity.pt");
    QString log;
    parityError_ = mrcnn::testing::runReferenceScript("tests/engine/rpn_parity.py", {out}, &log);
    if (!parityError_.isEmpty()) return;
    qInfo("%s", qPrintable(log));
    parityError_ = mrcnn::testing::readParityFile(out, &parity_);
  }

  // The state_dict loader maps rpn.head.* by these names: they must be torchvision's.
  void headParameterNamesAreTorchvisions() {
    model::RPNHead head(model::RPNHeadOptions{});
    std::vector<std::string> ours;
    for (const auto& item : head->named_parameters())
      ours.push_back(item.key());
    QCOMPARE(ours, model::RPNHeadImpl::parameterNames());
    QCOMPARE(model::RPNHeadImpl::parameterNames(2).at(2), std::string("conv.1.0.weight"));
    model::RPNHead deep(model::RPNHeadOptions{.in_channels = 8, .num_anchors = 3, .conv_depth = 2});
    std::vector<std::string> deep_names;
    for (const auto& item : deep->named_parameters())
      deep_names.push_back(item.key());
    QCOMPARE(deep_names, model::RPNHeadImpl::parameterNames(2));
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    std::vector<std::string> theirs;
    for (const auto& item : rpnCase().at("weights").toGenericDict())
      theirs.push_back(item.key().toStringRef());
    QCOMPARE(ours, theirs);
    for (const auto& [old_name, new_name] : model::RPNHeadImpl::legacyParameterNames())
      QVERIFY2(std::find(ours.begin(), ours.end(), new_name) != ours.end(), new_name.c_str());
  }

  // Rounded half-sizes, integer strides from the padded size (57 and 58 on the pooled level
  // here, not 64), cell major order: all exactly torchvision's.
  void torchvisionAnchorsAreExact() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    const Dict c = rpnCase();
    const model::AnchorGenerator gen(model::AnchorOptions::torchvision());
    QCOMPARE(gen.numAnchorsPerLocation(), (std::vector<int64_t>{3, 3, 3, 3, 3}));
    const at::Tensor ours = gen(tensorsAt(c, "features"), sizesOf(c).padded);
    const at::Tensor theirs = tensorAt(c, "anchors");
    QCOMPARE(ours.scalar_type(), theirs.scalar_type());
    QVERIFY2(ours.sizes() == theirs.sizes(), qPrintable(shapeOf(ours) + " vs " + shapeOf(theirs)));
    QVERIFY2(torch::equal(ours, theirs),
             qPrintable(QString("max |diff| %1").arg(maxAbsDiff(ours, theirs))));
    QVERIFY(torch::equal(ours, tensorAt(c, "anchors_image1")));
    // The cell anchors of the first level, by hand: 32 at ratios 0.5, 1, 2.
    QVERIFY(torch::equal(gen.cellAnchors(0), torch::tensor({{-23.f, -11.f, 23.f, 11.f},
                                                            {-16.f, -16.f, 16.f, 16.f},
                                                            {-11.f, -23.f, 11.f, 23.f}})));
  }

  // The spec's parameterisation against TAO's formula computed independently in Python.
  void taoAnchorsMatchTaosFormula() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    for (const c10::IValue& v : parity().at("tao").toList()) {
      const Dict c = v.toGenericDict();
      const at::Tensor pairs = tensorAt(c, "aspect_pairs");
      std::vector<std::pair<double, double>> p;
      for (int64_t i = 0; i < pairs.size(0); ++i)
        p.emplace_back(pairs[i][0].item<double>(), pairs[i][1].item<double>());
      const auto min_level = static_cast<int64_t>(doubleAt(c, "min_level"));
      const auto max_level = static_cast<int64_t>(doubleAt(c, "max_level"));
      const model::AnchorGenerator gen(model::AnchorOptions::tao(
          min_level, max_level, static_cast<int64_t>(doubleAt(c, "num_scales")),
          doubleAt(c, "anchor_scale"), p));
      const std::array<int64_t, 2> padded = pairAt(c.at("padded"));
      std::vector<std::array<int64_t, 2>> grids;
      for (int64_t l = min_level; l <= max_level; ++l)
        grids.push_back({padded[0] >> l, padded[1] >> l});
      const at::Tensor ours =
          at::cat(gen.anchorsPerLevel(grids, padded, at::TensorOptions().dtype(at::kFloat)), 0);
      const at::Tensor theirs = tensorAt(c, "anchors");
      const double d = maxRelDiff(ours, theirs);
      qInfo("TAO anchors, levels %lld..%lld: %lld anchors, max rel diff %.3g",
            static_cast<long long>(min_level), static_cast<long long>(max_level),
            static_cast<long long>(ours.size(0)), d);
      QVERIFY2(
          d < 1e-6,
          qPrintable(
              QString("max rel diff %1 (%2 vs %3)").arg(d).arg(shapeOf(ours), shapeOf(theirs))));
    }
    // The default pairs at level 2, scale 8: a 32 x 32 square, a 44.8 x 22.4 wide and a
    // 22.4 x 44.8 tall anchor, centred on (2, 2).
    const model::AnchorGenerator tao(
        model::AnchorOptions::tao(2, 2, 1, 8.0, {{1.0, 1.0}, {1.4, 0.7}, {0.7, 1.4}}));
    const at::Tensor first =
        tao.anchorsPerLevel({{1, 1}}, {4, 4}, at::TensorOptions().dtype(at::kDouble))[0];
    QVERIFY(torch::allclose(first, torch::tensor({{-14.0, -14.0, 18.0, 18.0},
                                                  {-20.4, -9.2, 24.4, 13.2},
                                                  {-9.2, -20.4, 13.2, 24.4}},
                                                 at::kDouble)));
  }

  void headOutputsMatchTorchvision() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    const Dict c = rpnCase();
    model::RegionProposalNetwork rpn = torchvisionRpn(c.at("weights").toGenericDict());
    torch::NoGradGuard no_grad;
    const auto [logits, deltas] = rpn->head()->forward(tensorsAt(c, "features"));
    const std::vector<at::Tensor> tl = tensorsAt(c, "logits"), td = tensorsAt(c, "deltas");
    QCOMPARE(logits.size(), tl.size());
    for (size_t l = 0; l < tl.size(); ++l) {
      const double dl = maxRelDiff(logits[l], tl[l]), dd = maxRelDiff(deltas[l], td[l]);
      qInfo("level %zu: logits %s rel diff %.3g, deltas rel diff %.3g", l,
            qPrintable(shapeOf(logits[l])), dl, dd);
      QVERIFY2(dl < 1e-5 && dd < 1e-5,
               qPrintable(QString("level %1: %2, %3").arg(l).arg(dl).arg(dd)));
    }
  }

  void evalProposalsMatchTorchvision() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    const Dict c = rpnCase();
    model::RegionProposalNetwork rpn = torchvisionRpn(c.at("weights").toGenericDict());
    rpn->eval();
    torch::NoGradGuard no_grad;
    const model::RPNOutput out = rpn->forward(tensorsAt(c, "features"), sizesOf(c));
    QVERIFY(!out.losses.has_value());
    compareProposals(out.boxes, tensorsAt(c, "eval_boxes"), "eval");
    const std::vector<at::Tensor> scores = tensorsAt(c, "eval_scores");
    for (size_t i = 0; i < scores.size(); ++i)
      QVERIFY2(maxAbsDiff(out.scores[i], scores[i]) < 1e-5, "eval scores");
  }

  // Train mode: the training top-n, the losses with torchvision's own sample, and the
  // gradients of the head's parameters through both losses.
  void trainLossesAndGradientsMatchTorchvision() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    const Dict c = rpnCase();
    model::RegionProposalNetwork rpn = torchvisionRpn(c.at("weights").toGenericDict());
    rpn->train();
    model::RPNTargets targets;
    targets.boxes = tensorsAt(c, "gt_boxes");
    const std::vector<at::Tensor> pos = tensorsAt(c, "sampled_positive");
    const std::vector<at::Tensor> neg = tensorsAt(c, "sampled_negative");
    for (size_t i = 0; i < pos.size(); ++i)
      targets.sampled.push_back({pos[i], neg[i]});
    const model::RPNOutput out = rpn->forward(tensorsAt(c, "features"), sizesOf(c), &targets);
    compareProposals(out.boxes, tensorsAt(c, "train_boxes"), "train");
    QVERIFY(out.losses.has_value());
    const double dobj = relDiff(out.losses->objectness, tensorAt(c, "loss_objectness"));
    const double dbox = relDiff(out.losses->box, tensorAt(c, "loss_rpn_box_reg"));
    qInfo("loss_objectness %.7f (rel diff %.3g), loss_rpn_box_reg %.7f (rel diff %.3g)",
          out.losses->objectness.item<double>(), dobj, out.losses->box.item<double>(), dbox);
    QVERIFY2(dobj < 1e-4, qPrintable(QString("objectness loss rel diff %1").arg(dobj)));
    QVERIFY2(dbox < 1e-4, qPrintable(QString("box loss rel diff %1").arg(dbox)));
    QVERIFY(torch::equal(out.losses->box_weighted, out.losses->box));  // weight 1

    (out.losses->objectness + out.losses->box).backward();
    const Dict grads = c.at("grads").toGenericDict();
    for (const auto& item : rpn->head()->named_parameters()) {
      const std::string& name = item.key();
      const at::Tensor& p = item.value();
      const at::Tensor theirs = grads.at(name).toTensor();
      // Relative to the gradient's own scale: its elements span orders of magnitude.
      const double d = maxAbsDiff(p.grad(), theirs) / theirs.abs().max().item<double>();
      qInfo("grad %s: max |diff| / max |grad| %.3g", name.c_str(), d);
      QVERIFY2(d < 1e-4, qPrintable(QString("%1: %2").arg(name.c_str()).arg(d)));
    }
  }

  void matcherMatchesTorchvision() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    int n = 0;
    for (const c10::IValue& v : parity().at("matcher").toList()) {
      const Dict c = v.toGenericDict();
      const model::Matcher matcher(model::MatcherOptions{doubleAt(c, "high"), doubleAt(c, "low"),
                                                         c.at("allow_low_quality").toBool()});
      const at::Tensor ours = matcher(tensorAt(c, "quality"));
      QVERIFY2(torch::equal(ours, tensorAt(c, "matches")), qPrintable(QString("case %1").arg(n)));
      ++n;
    }
    QVERIFY(n > 0);
  }

  // By hand: gt 0's best prediction (ties 0 and 1 at 0.2) is taken back even below the low
  // threshold; prediction 2 sits between the thresholds; 3 is a plain match.
  void matcherLowQualityMatchesIncludeTies() {
    const at::Tensor q = torch::tensor({{0.2f, 0.2f, 0.1f, 0.0f}, {0.0f, 0.1f, 0.5f, 0.9f}});
    const model::Matcher with(model::MatcherOptions{0.7, 0.3, true});
    QVERIFY(torch::equal(with(q), torch::tensor({0, 0, -2, 1}, at::kLong)));
    const model::Matcher without(model::MatcherOptions{0.7, 0.3, false});
    QVERIFY(torch::equal(without(q), torch::tensor({-1, -1, -2, 1}, at::kLong)));
    QVERIFY_THROWS_EXCEPTION(c10::Error, with(torch::zeros({0, 4})));
  }

  // An image with many objects: the IoU matrix is taken a block of anchors at a time, with the
  // same matches as the whole matrix, bit for bit (random boxes on a coarse grid, so that
  // many IoUs tie, and blocks that do not divide the anchors), both with low-quality matches
  // and without.
  void blockwiseMatchingEqualsTheWholeMatrix() {
    at::manual_seed(11);
    const auto boxes = [](int64_t n) {
      const at::Tensor xy = at::randint(0, 20, {n, 2}).to(at::kFloat) * 8;
      const at::Tensor wh = at::randint(1, 6, {n, 2}).to(at::kFloat) * 8;
      return at::cat({xy, xy + wh}, 1);
    };
    for (const int64_t objects : {1, 7, 300}) {
      const at::Tensor gt = boxes(objects), anchors = boxes(5003);
      for (const bool low_quality : {true, false}) {
        const model::Matcher matcher(model::MatcherOptions{0.7, 0.3, low_quality});
        const at::Tensor whole = matcher(ops::box_iou(gt, anchors));
        for (const int64_t block : {int64_t{1}, objects * 97, objects * 5003, int64_t{1} << 23}) {
          const at::Tensor blocks = matcher.matchBoxes(gt, anchors, block);
          QVERIFY2(torch::equal(blocks, whole),
                   qPrintable(QString("%1 objects, low quality %2, block %3: %4 matches differ")
                                  .arg(objects)
                                  .arg(low_quality)
                                  .arg(block)
                                  .arg((blocks != whole).sum().item<int64_t>())));
        }
        if (low_quality)
          QVERIFY((whole >= 0).sum().item<int64_t>() >= std::min<int64_t>(objects, 5));
      }
    }
  }

  void samplerCountsAndSeeds() {
    const SamplerLabels l = samplerLabels();
    auto sample = [&](uint64_t seed) {
      model::BalancedPositiveNegativeSampler s(model::SamplerOptions{256, 0.5},
                                               at::make_generator<at::CPUGeneratorImpl>(seed));
      return s({l.few_pos, l.many_pos});
    };
    const std::vector<model::SampledMasks> a = sample(1), b = sample(1), c = sample(2);
    checkSamplerCounts(a, l);
    if (QTest::currentTestFailed()) return;
    // The same seed draws the same sample; another seed another one.
    QVERIFY(torch::equal(a[0].negative, b[0].negative) &&
            torch::equal(a[1].positive, b[1].positive));
    QVERIFY(!torch::equal(a[0].negative, c[0].negative));
  }

  // The draw a GPU makes (SamplerOptions::draw_on_device), here on the CPU: the same counts
  // as torchvision's rule, only elements of the right label, the same elements for the same
  // key and other ones for another, and every eligible element equally likely.
  void samplerDrawnOnTheDevice() {
    const SamplerLabels l = samplerLabels();
    model::SamplerOptions options{256, 0.5};
    options.draw_on_device = true;
    model::BalancedPositiveNegativeSampler s(options);
    const auto a = s({l.few_pos, l.many_pos}, {11, 12});
    const auto b = s({l.few_pos, l.many_pos}, {11, 12});
    const auto c = s({l.few_pos, l.many_pos}, {13, 12});
    checkSamplerCounts(a, l);
    if (QTest::currentTestFailed()) return;
    QVERIFY(torch::equal(a[0].negative, b[0].negative) &&
            torch::equal(a[1].positive, b[1].positive));
    QVERIFY(!torch::equal(a[0].negative, c[0].negative));
    QVERIFY(torch::equal(a[1].positive, c[1].positive));  // image 1's key is the same
    // The batch is drawn at once, each image padded to the longest: an image draws the same
    // elements alone, beside a longer or a shorter one, or beside an empty one.
    const at::Tensor empty = torch::zeros({0}, l.few_pos.options());
    const auto alone0 = s({l.few_pos}, {11}), alone1 = s({l.many_pos}, {12});
    const auto mixed = s({l.many_pos, empty, l.few_pos}, {12, 5, 11});
    QVERIFY(torch::equal(alone0[0].negative, a[0].negative) &&
            torch::equal(alone0[0].positive, a[0].positive));
    QVERIFY(torch::equal(alone1[0].negative, a[1].negative) &&
            torch::equal(alone1[0].positive, a[1].positive));
    QVERIFY(torch::equal(mixed[0].positive, a[1].positive) &&
            torch::equal(mixed[0].negative, a[1].negative));
    QVERIFY(torch::equal(mixed[2].positive, a[0].positive) &&
            torch::equal(mixed[2].negative, a[0].negative));
    QCOMPARE(mixed[1].positive.numel(), int64_t{0});
    QCOMPARE(mixed[1].negative.numel(), int64_t{0});
    // Uniform: over 1000 keys each of the 490 positives is taken 128/490 of the time (binomial
    // spread 0.014: a bound of 0.07 is 5 spreads), each of the 1000 negatives 226/1000.
    at::Tensor taken_pos = torch::zeros({500}), taken_neg = torch::zeros({1100});
    for (uint64_t key = 0; key < 1000; ++key) {
      const auto d = s({l.few_pos, l.many_pos}, {key, key});
      taken_neg += d[0].negative.to(at::kFloat);
      taken_pos += d[1].positive.to(at::kFloat);
    }
    const double p_pos = 128.0 / 490, p_neg = 226.0 / 1000;
    const double worst_pos =
        (taken_pos.narrow(0, 10, 490) / 1000 - p_pos).abs().max().item<double>();
    const double worst_neg =
        (taken_neg.narrow(0, 30, 1000) / 1000 - p_neg).abs().max().item<double>();
    QVERIFY2(worst_pos < 0.07 && worst_neg < 0.07,
             qPrintable(QString("largest departures %1, %2").arg(worst_pos).arg(worst_neg)));
  }

  // No ground truth in an image: every anchor a negative, no box loss from it, no crash.
  void trainingWithoutGroundTruth() {
    torch::manual_seed(3);
    model::RegionProposalNetwork rpn(model::AnchorGenerator(model::AnchorOptions::tao(
                                         2, 3, 1, 8.0, {{1, 1}, {1.4, 0.7}, {0.7, 1.4}})),
                                     model::RPNHead(model::RPNHeadOptions{.in_channels = 8}),
                                     model::RPNOptions{},
                                     at::make_generator<at::CPUGeneratorImpl>(5));
    rpn->train();
    const std::vector<at::Tensor> features = {torch::randn({1, 8, 16, 16}),
                                              torch::randn({1, 8, 8, 8})};
    model::RPNTargets targets;
    targets.boxes = {torch::zeros({0, 4})};
    const model::RPNOutput out = rpn->forward(features, {{64, 64}, {{60, 50}}}, &targets);
    QVERIFY(out.losses.has_value());
    QCOMPARE(out.losses->box.item<double>(), 0.0);
    QVERIFY(std::isfinite(out.losses->objectness.item<double>()));
    QVERIFY(out.boxes[0].size(0) > 0);
    QVERIFY((out.boxes[0].select(1, 2) <= 50).all().item<bool>());
    QVERIFY((out.boxes[0].select(1, 3) <= 60).all().item<bool>());
    QVERIFY_THROWS_EXCEPTION(c10::Error, rpn->forward(features, {{64, 64}, {{60, 50}}}));
  }

  // The indices a where() gives, from a count read beforehand: same values, same order.
  void countedIndicesAreWheresIndices() {
    for (const double p : {0.0, 0.01, 0.5, 1.0}) {
      for (const int64_t n : {0, 1, 1000, 100000}) {
        const at::Tensor mask = torch::rand({n}) < p;
        const int64_t count = mask.sum().item<int64_t>();
        QVERIFY(torch::equal(model::countedIndices(mask, count), at::where(mask)[0]));
        QVERIFY(torch::equal(model::countedIndices(mask.to(at::kByte), count), at::where(mask)[0]));
      }
    }
  }

  // On a GPU the proposals of a batch make the host wait once (how many boxes each image
  // keeps after its NMS), not once an image or more.
  void proposalsOnGpuWaitOnce() {
    if (!torch::cuda::is_available()) QSKIP("no GPU visible: this check runs where a GPU is");
    torch::manual_seed(4);
    model::RegionProposalNetwork rpn(model::AnchorGenerator(model::AnchorOptions::tao(
                                         2, 4, 1, 8.0, {{1, 1}, {1.4, 0.7}, {0.7, 1.4}})),
                                     model::RPNHead(model::RPNHeadOptions{.in_channels = 8}),
                                     model::RPNOptions{},
                                     at::make_generator<at::CPUGeneratorImpl>(5));
    rpn->to(torch::kCUDA);
    rpn->eval();
    torch::NoGradGuard no_grad;
    std::vector<at::Tensor> features;
    for (int64_t side : {64, 32, 16})
      features.push_back(torch::randn({3, 8, side, side}, torch::kCUDA));
    const model::ImageSizes sizes{{256, 256}, {{256, 256}, {200, 240}, {256, 100}}};
    rpn->forward(features, sizes);  // warm-up: kernel loads, allocations
    mrcnn::engine::SyncCounter counter(true);
    const model::RPNOutput out = rpn->forward(features, sizes);
    const mrcnn::engine::SyncCount count = counter.stop();
    QVERIFY2(count.total == 1, count.json().c_str());
    QCOMPARE(out.boxes.size(), size_t{3});
    QVERIFY(out.boxes[0].size(0) > 0);
  }

  void specFieldsMapToOptions() {
    model::RPNSpecFields spec;
    spec.train_rpn_post_nms_topn = 1500;
    spec.rpn_box_loss_weight = 2.0f;
    const model::RPNOptions o = model::toRPNOptions(spec);
    QCOMPARE(o.pre_nms_top_n_train, int64_t{2000});
    QCOMPARE(o.post_nms_top_n_train, int64_t{1500});
    QCOMPARE(o.min_size, 1e-3);  // the spec's 0 becomes torchvision's floor
    QCOMPARE(o.box_loss_weight, 2.0);
    QCOMPARE(o.fg_iou_thresh, static_cast<double>(0.7f));
  }
};

QTEST_GUILESS_MAIN(TestRpn)
#include "test_rpn.moc"

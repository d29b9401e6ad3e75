// The model in channels-last (NHWC) against the model in NCHW (engine/model/activation_layout.h):
// auto's choice, the same detections and the same losses and gradients
// from the same weights (to the convolution libraries' float rounding), the convolution
// weights moved to the mode's layout and back without a change of value.
#include <ATen/ATen.h>
#include <torch/torch.h>  // before Qt: its "slots" macro breaks LibTorch's headers

#include <ATen/record_function.h>
#include <QtTest>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/activation_layout.h"
#include "engine/model/mask_rcnn.h"
#include "tests/engine/small_mask_rcnn.h"
#include "tests/engine/tensor_compare.h"

namespace model = mrcnn::model;
using mrcnn::testing::relError;
using namespace mrcnn::testing::small_mask_rcnn;

namespace {

std::vector<at::Tensor> convWeights(model::MaskRCNNImpl& m) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : m.parameters())
    if (p.dim() == 4) out.push_back(p);
  return out;
}

bool allIn(const std::vector<at::Tensor>& ts, at::MemoryFormat format) {
  for (const at::Tensor& t : ts)
    if (!t.is_contiguous(format)) return false;
  return true;
}

// The feature maps of every mrcnn::multilevel_roi_align call while one is alive, as the
// operator received them (a transpose before it would show as maps in the other layout).
struct RoiAlignInputs {
  static inline std::vector<std::vector<at::Tensor>> calls;

  RoiAlignInputs() {
    calls.clear();
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&RoiAlignInputs::onStart).needsInputs(true));
  }
  ~RoiAlignInputs() { at::removeCallback(handle_); }
  RoiAlignInputs(const RoiAlignInputs&) = delete;
  RoiAlignInputs& operator=(const RoiAlignInputs&) = delete;

  static std::unique_ptr<at::ObserverContext> onStart(const at::RecordFunction& fn) {
    const auto inputs = fn.inputs();
    if (std::string(fn.name()) == "mrcnn::multilevel_roi_align" && !inputs.empty() &&
        inputs[0].isTensorList())
      calls.push_back(inputs[0].toTensorVector());
    return nullptr;
  }

 private:
  at::CallbackHandle handle_;
};

}  // namespace

class TestActivationLayout : public QObject {
  Q_OBJECT

 private slots:
  void autoIsChannelsLast() {
    using model::ActivationLayout;
    QVERIFY(model::channelsLastFor(ActivationLayout::Auto));
    QVERIFY(model::channelsLastFor(ActivationLayout::Nhwc));
    QVERIFY(!model::channelsLastFor(ActivationLayout::Nchw));
    QCOMPARE(model::describeLayout(ActivationLayout::Auto), std::string("auto: channels-last (NHWC)"));
    QCOMPARE(model::describeLayout(ActivationLayout::Nchw), std::string("NCHW"));
    QVERIFY(model::parseActivationLayout("nhwc") == ActivationLayout::Nhwc);
    QVERIFY(model::parseActivationLayout("auto") == ActivationLayout::Auto);
    QVERIFY(!model::parseActivationLayout("NHWC").has_value());
  }

  // Inference, batch norms folded: the features and every detection agree.
  void nhwcDetectsWhatNchwDetects() {
    model::MaskRCNN nchw = makeModel(model::ActivationLayout::Nchw, 7);
    model::MaskRCNN nhwc = makeModel(model::ActivationLayout::Nhwc, 7);
    nchw->prepareForInference();
    nhwc->prepareForInference();
    QVERIFY(allIn(convWeights(*nhwc), at::MemoryFormat::ChannelsLast));
    QVERIFY(allIn(convWeights(*nchw), at::MemoryFormat::Contiguous));

    at::manual_seed(3);
    const at::Tensor images = at::randn({2, 3, kHeight, kWidth});
    model::MaskRCNNTrace ta, tb;
    const auto a = nchw->detect(images, sizesOf(2), &ta);
    const auto b = nhwc->detect(images, sizesOf(2), &tb);
    QCOMPARE(ta.features.size(), tb.features.size());
    for (size_t l = 0; l < ta.features.size(); ++l) {
      QVERIFY(tb.features[l].is_contiguous(at::MemoryFormat::ChannelsLast));
      QVERIFY2(relError(tb.features[l], ta.features[l]) < 1e-5,
               qPrintable(QString("level %1: %2").arg(l).arg(relError(tb.features[l], ta.features[l]))));
    }
    QCOMPARE(a.size(), b.size());
    int64_t compared = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      QCOMPARE(a[i].boxes.size(0), b[i].boxes.size(0));
      QVERIFY(a[i].boxes.size(0) > 10);
      QVERIFY(torch::equal(a[i].labels, b[i].labels));
      QVERIFY2(relError(b[i].boxes, a[i].boxes) < 1e-4, "boxes");
      QVERIFY2(relError(b[i].scores, a[i].scores) < 1e-4, "scores");
      QVERIFY(b[i].masks.is_contiguous());
      QVERIFY2(relError(b[i].masks, a[i].masks) < 1e-4, "masks");
      compared += a[i].boxes.size(0);
    }
    qInfo("%lld detections agree", static_cast<long long>(compared));
  }

  // Training: the five losses and every parameter's gradient agree; the convolution weights
  // and their gradients are channels-last. (The tolerance is the model's own sensitivity: the
  // NCHW model given images 1e-7 larger moves the box head's gradients by 1.4e-3 too.)
  void nhwcTrainsAsNchw() {
    model::MaskRCNN nchw = makeModel(model::ActivationLayout::Nchw, 9);
    model::MaskRCNN nhwc = makeModel(model::ActivationLayout::Nhwc, 9);
    nchw->train();
    nhwc->train();
    at::manual_seed(4);
    const at::Tensor images = at::randn({2, 3, kHeight, kWidth});
    const model::MaskRCNNLosses la = nchw->losses(images, sizesOf(2), targetsOf(2));
    const model::MaskRCNNLosses lb = nhwc->losses(images, sizesOf(2), targetsOf(2));
    const std::vector<std::pair<const char*, std::pair<at::Tensor, at::Tensor>>> pairs = {
        {"objectness", {la.rpn_objectness, lb.rpn_objectness}},
        {"rpn_box", {la.rpn_box, lb.rpn_box}},
        {"classifier", {la.classifier, lb.classifier}},
        {"box_reg", {la.box_reg, lb.box_reg}},
        {"mask", {la.mask, lb.mask}}};
    for (const auto& [name, p] : pairs) {
      QVERIFY2(relError(p.second, p.first) < 1e-4,
               qPrintable(QString("%1: %2 against %3")
                              .arg(name)
                              .arg(p.second.item<double>())
                              .arg(p.first.item<double>())));
    }
    la.total.backward();
    lb.total.backward();
    const auto pa = nchw->named_parameters();
    const auto pb = nhwc->named_parameters();
    int with_grad = 0;
    double worst = 0;
    std::string worst_name;
    for (const auto& item : pa) {
      const at::Tensor& ga = item.value().grad();
      const at::Tensor& gb = pb[item.key()].grad();
      QCOMPARE(ga.defined(), gb.defined());
      if (!ga.defined()) continue;
      ++with_grad;
      if (gb.dim() == 4) QVERIFY(gb.is_contiguous(at::MemoryFormat::ChannelsLast));
      if (relError(gb, ga) > worst) {
        worst = relError(gb, ga);
        worst_name = item.key();
      }
    }
    qInfo("%d gradients, the largest relative difference %.3g (%s)", with_grad, worst,
          worst_name.c_str());
    QVERIFY(with_grad > 20);
    QVERIFY2(worst < 5e-3, worst_name.c_str());
  }

  // RoIAlign (boxes, then masks) reads the feature maps in the model's layout, where the
  // FPN left them: channels-last maps are not made NCHW first, in inference or in training.
  void roiAlignReadsTheMapsInTheModelsLayout() {
    for (const auto& [layout, format] :
         {std::pair{model::ActivationLayout::Nhwc, at::MemoryFormat::ChannelsLast},
          std::pair{model::ActivationLayout::Nchw, at::MemoryFormat::Contiguous}}) {
      model::MaskRCNN m = makeModel(layout, 11);
      at::manual_seed(5);
      const at::Tensor images = at::randn({2, 3, kHeight, kWidth});
      for (const bool training : {false, true}) {
        m->train(training);
        RoiAlignInputs seen;
        if (training) {
          (void)m->losses(images, sizesOf(2), targetsOf(2));
        } else {
          torch::NoGradGuard no_grad;
          (void)m->detect(images, sizesOf(2));
        }
        // The box head's and the mask head's (each may be seen at more than one dispatch).
        QVERIFY(RoiAlignInputs::calls.size() >= 2);
        for (const std::vector<at::Tensor>& maps : RoiAlignInputs::calls) {
          QCOMPARE(maps.size(), size_t{4});
          QVERIFY2(allIn(maps, format), training ? "training" : "inference");
        }
      }
    }
  }

  // Weights loaded in NCHW (as every checkpoint is read) move to channels-last at the first
  // step, training or inference, and back when the layout asked changes; the weights' values
  // never change, and the parameters stay the same objects.
  void weightsFollowTheLayoutWithoutChangingValue() {
    model::MaskRCNN m = makeModel(model::ActivationLayout::Auto, 5);
    model::StateDict before = m->torchvisionState();
    for (auto& kv : before) kv.second = kv.second.clone();
    const at::Tensor first = convWeights(*m).front();
    QVERIFY(allIn(convWeights(*m), at::MemoryFormat::Contiguous));
    const at::Tensor images = at::randn({1, 3, kHeight, kWidth});
    m->train();
    (void)m->losses(images, sizesOf(1), targetsOf(1));
    QVERIFY(allIn(convWeights(*m), at::MemoryFormat::ChannelsLast));
    QVERIFY(convWeights(*m).front().is_same(first));
    // A model told NCHW (the same module, as a caller switching layouts would).
    model::MaskRCNN n = makeModel(model::ActivationLayout::Nchw, 5);
    (void)model::setConvWeightLayout(*n, at::MemoryFormat::ChannelsLast);
    n->eval();
    (void)n->detect(images, sizesOf(1));
    QVERIFY(allIn(convWeights(*n), at::MemoryFormat::Contiguous));
    m->eval();
    (void)m->detect(images, sizesOf(1));
    QVERIFY(allIn(convWeights(*m), at::MemoryFormat::ChannelsLast));
    const model::StateDict after = m->torchvisionState();
    QCOMPARE(after.size(), before.size());
    for (size_t i = 0; i < before.size(); ++i)
      QVERIFY2(torch::equal(after[i].second, before[i].second), before[i].first.c_str());
  }
};

QTEST_GUILESS_MAIN(TestActivationLayout)
#include "test_activation_layout.moc"

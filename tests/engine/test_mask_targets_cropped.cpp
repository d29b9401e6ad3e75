// mrcnn::mask_targets_cropped (engine/ops/mask_targets.h): the mask targets read from the
// masks' crops, as the loader keeps them, equal bit for bit to mask_targets on the whole
// masks (tight, loose and empty windows, windows at the image's edges, RoIs inside, across
// and outside the image), and so are the mask loss (model::maskRCNNLoss) and its gradient;
// bad crops are refused by name on the CPU and give NaN on a GPU.
#include <torch/cuda.h>
#include <torch/torch.h>

#include <QtTest>
#include <algorithm>
#include <string>
#include <vector>

#include "engine/model/cropped_masks.h"
#include "engine/model/mask_head.h"
#include "engine/ops/mask_targets.h"
#include "tests/engine/ops_test_support.h"

namespace {

using namespace mrcnn::testing::ops_support;
namespace model = mrcnn::model;
namespace ops = mrcnn::ops;

struct MaskSet {
  at::Tensor whole;           // uint8 [G, H, W]
  model::CroppedMasks crops;  // the same masks, each as the crop of its window
};

int64_t randomIn(int64_t lo, int64_t hi) {  // in [lo, hi]
  return torch::randint(lo, hi + 1, {1}, at::kLong).item<int64_t>();
}

// g random masks of h x w: each a rectangle of random pixels (some at the image's edges),
// cropped to the rectangle widened by `margin` pixels where the image allows; the last mask
// is empty (a 0 x 0 window when tight, a window of zeros when loose).
MaskSet randomMasks(int64_t g, int64_t h, int64_t w, int64_t margin) {
  MaskSet s;
  s.whole = torch::zeros({g, h, w}, at::kByte);
  std::vector<int64_t> windows, offsets;
  std::vector<at::Tensor> bytes;
  int64_t at_byte = 0;
  for (int64_t i = 0; i < g; ++i) {
    const bool empty = i == g - 1;
    const int64_t ch = randomIn(1, h / 2), cw = randomIn(1, w / 2);
    int64_t y0 = randomIn(0, h - ch), x0 = randomIn(0, w - cw);
    if (i % 3 == 0) y0 = 0;       // at the top edge
    if (i % 3 == 1) x0 = w - cw;  // at the right edge
    if (!empty) {
      s.whole[i].narrow(0, y0, ch).narrow(1, x0, cw).copy_(torch::rand({ch, cw}).gt(0.3));
    }
    const int64_t wy0 = std::max<int64_t>(0, y0 - margin), wx0 = std::max<int64_t>(0, x0 - margin);
    int64_t wh = std::min(h, y0 + ch + margin) - wy0, ww = std::min(w, x0 + cw + margin) - wx0;
    if (empty && margin == 0) wh = ww = 0;
    windows.insert(windows.end(), {wx0, wy0, ww, wh});
    offsets.push_back(at_byte);
    bytes.push_back(s.whole[i].narrow(0, wy0, wh).narrow(1, wx0, ww).reshape({-1}));
    at_byte += wh * ww;
  }
  s.crops.height = h;
  s.crops.width = w;
  s.crops.windows = torch::tensor(windows, at::kLong).view({g, 4});
  s.crops.offsets = torch::tensor(offsets, at::kLong);
  s.crops.data = at::cat(bytes).contiguous();
  return s;
}

// RoIs across the image (some partly or wholly outside it, some tiny), and the whole image.
at::Tensor someRois(int64_t k, int64_t h, int64_t w, at::ScalarType dtype) {
  const at::Tensor rois = randomRois(k, 1, static_cast<double>(h), static_cast<double>(w), dtype)
                              .narrow(1, 1, 4)
                              .contiguous();
  const at::Tensor tiny = torch::tensor({{3.0, 4.0, 3.2, 4.1}}).to(dtype);
  const at::Tensor all =
      torch::tensor({{0.0, 0.0, static_cast<double>(w), static_cast<double>(h)}}).to(dtype);
  return at::cat({rois, tiny, all});
}

at::Tensor targetsOf(const model::CroppedMasks& c, const at::Tensor& rois,
                     const at::Tensor& matched, int64_t m) {
  return ops::mask_targets_cropped(c.data, c.windows, c.offsets, c.height, c.width, rois, matched,
                                   m);
}

}  // namespace

class TestMaskTargetsCropped : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    torch::manual_seed(321);
    at::set_num_threads(2);
  }

  void targetsEqualTheWholeMasks() {
    for (const int64_t margin : {0, 3}) {
      for (const at::ScalarType dtype : {at::kFloat, at::kDouble}) {
        for (const int64_t m : {7, 28}) {
          const MaskSet s = randomMasks(7, 45, 67, margin);
          const at::Tensor rois = someRois(150, 45, 67, dtype);
          const at::Tensor matched = torch::randint(0, 7, {rois.size(0)}, at::kLong);
          const at::Tensor whole = ops::mask_targets(s.whole, rois, matched, m);
          const at::Tensor cropped = targetsOf(s.crops, rois, matched, m);
          QCOMPARE(cropped.scalar_type(), dtype);
          QVERIFY2(torch::equal(cropped, whole),
                   qPrintable(QString("margin %1, M %2: max |diff| %3")
                                  .arg(margin)
                                  .arg(m)
                                  .arg(maxAbsDiff(cropped, whole))));
          QVERIFY(whole.gt(0).any().item<bool>());  // the RoIs do see mask pixels
        }
      }
    }
  }

  // Strided inputs are read as their values.
  void stridedInputsGiveTheSameTargets() {
    const MaskSet s = randomMasks(5, 30, 40, 1);
    const at::Tensor rois = someRois(60, 30, 40, at::kFloat);
    const at::Tensor matched = torch::randint(0, 5, {rois.size(0)}, at::kLong);
    const at::Tensor expected = targetsOf(s.crops, rois, matched, 14);
    model::CroppedMasks strided = s.crops;
    strided.windows = transposedView(s.crops.windows);
    strided.offsets = at::stack({s.crops.offsets, s.crops.offsets}, 1).select(1, 0);
    QVERIFY(!strided.offsets.is_contiguous());
    QVERIFY(torch::equal(targetsOf(strided, slicedView(rois), matched, 14), expected));
  }

  void lossAndGradientEqualTheWholeMasks() {
    std::vector<MaskSet> images = {randomMasks(4, 40, 50, 0), randomMasks(6, 40, 50, 2)};
    std::vector<at::Tensor> rois, labels, matched, whole;
    std::vector<model::CroppedMasks> crops;
    for (const MaskSet& s : images) {
      rois.push_back(someRois(20, 40, 50, at::kFloat));
      matched.push_back(torch::randint(0, s.whole.size(0), {rois.back().size(0)}, at::kLong));
      labels.push_back(torch::randint(1, 5, {s.whole.size(0)}, at::kLong));
      whole.push_back(s.whole);
      crops.push_back(s.crops);
    }
    const at::Tensor logits = torch::randn({44, 5, 28, 28});
    const at::Tensor a = logits.clone().requires_grad_(true);
    const at::Tensor b = logits.clone().requires_grad_(true);
    const at::Tensor from_whole = model::maskRCNNLoss(a, rois, whole, labels, matched);
    const at::Tensor from_crops = model::maskRCNNLoss(b, rois, crops, labels, matched);
    from_whole.backward();
    from_crops.backward();
    QVERIFY(torch::equal(from_crops, from_whole));
    QVERIFY(torch::equal(b.grad(), a.grad()));
    QVERIFY(from_whole.item<double>() > 0);
    // A mask count that is not the labels' is named.
    std::vector<at::Tensor> short_labels = {labels[0], labels[1].narrow(0, 0, 5)};
    const std::string e =
        errorOf([&] { model::maskRCNNLoss(logits, rois, crops, short_labels, matched); });
    QVERIFY2(e.find("image 1 has 6 ground-truth masks") != std::string::npos, e.c_str());
  }

  void noRoiAndBadCrops() {
    const MaskSet s = randomMasks(3, 20, 30, 0);
    const model::CroppedMasks& c = s.crops;
    QCOMPARE(targetsOf(c, torch::zeros({0, 4}), torch::zeros({0}, at::kLong), 28).sizes().vec(),
             (std::vector<int64_t>{0, 28, 28}));
    const at::Tensor box = torch::tensor({{1.f, 1.f, 9.f, 9.f}});
    const at::Tensor first = torch::tensor({0}, at::kLong);
    auto expectError = [](const std::string& message, const char* needle) {
      QVERIFY2(message.find(needle) != std::string::npos,
               qPrintable(QString::fromStdString("\"" + message + "\" lacks \"") + needle + "\""));
    };
    expectError(errorOf([&] { targetsOf(c, box, torch::tensor({3}, at::kLong), 28); }),
                "mask_targets_cropped: matched_idxs[0] = 3 is outside [0, 3)");
    model::CroppedMasks outside = c;
    outside.windows = c.windows.clone();
    outside.windows[0][0] = 28;  // x0 + width past the 30-pixel-wide image
    outside.windows[0][2] = 5;
    expectError(errorOf([&] { targetsOf(outside, box, first, 28); }), "mask 0's window (28, ");
    expectError(errorOf([&] { targetsOf(outside, box, first, 28); }), "does not fit its 30 x 20");
    model::CroppedMasks short_data = c;  // mask 0 is not empty: its crop is past the bytes
    short_data.data = c.data.narrow(0, 0, 0);
    expectError(errorOf([&] { targetsOf(short_data, box, first, 28); }), "bytes of crops");
    model::CroppedMasks wrong_dtype = c;
    wrong_dtype.data = c.data.to(at::kFloat);
    expectError(errorOf([&] { targetsOf(wrong_dtype, box, first, 28); }),
                "crops must be the uint8 bytes");
    model::CroppedMasks wrong_windows = c;
    wrong_windows.windows = c.windows.narrow(1, 0, 3);
    expectError(errorOf([&] { targetsOf(wrong_windows, box, first, 28); }),
                "windows must be int64 [G, 4]");
    model::CroppedMasks wrong_offsets = c;
    wrong_offsets.offsets = c.offsets.narrow(0, 0, 2);
    expectError(errorOf([&] { targetsOf(wrong_offsets, box, first, 28); }),
                "offsets must be int64 [G] (G = 3)");
    expectError(errorOf([&] { targetsOf(c, box, first, 0); }),
                "mask_targets_cropped: the target size M must be positive");
    expectError(errorOf([&] { targetsOf(c, box.to(at::kHalf), first, 28); }),
                "mask_targets_cropped: rois must be float or double");
  }

  void cudaKernelMatchesCpu() {
    SKIP_WITHOUT_GPU();
    const MaskSet s = randomMasks(6, 60, 90, 2);
    const at::Tensor rois = someRois(300, 60, 90, at::kFloat);
    const at::Tensor matched = torch::randint(0, 6, {rois.size(0)}, at::kLong);
    const model::CroppedMasks g = model::toDevice(s.crops, torch::kCUDA);
    const at::Tensor gpu = targetsOf(g, rois.cuda(), matched.cuda(), 28);
    QVERIFY(torch::equal(gpu, ops::mask_targets(s.whole.cuda(), rois.cuda(), matched.cuda(), 28)));
    const at::Tensor cpu = targetsOf(s.crops, rois, matched, 28);
    QVERIFY2(maxAbsDiff(gpu, cpu) < 1e-5, qPrintable(QString::number(maxAbsDiff(gpu, cpu))));
    // No host check on a GPU: a bad index or window gives NaN for its RoI.
    at::Tensor bad = matched.clone();
    bad[0] = 6;
    QVERIFY(targetsOf(g, rois.cuda(), bad.cuda(), 28)[0].isnan().all().item<bool>());
    model::CroppedMasks outside = g;
    outside.windows = g.windows.clone();
    outside.windows[matched[1].item<int64_t>()][0] = 89;
    QVERIFY(targetsOf(outside, rois.cuda(), matched.cuda(), 28)[1].isnan().all().item<bool>());
  }
};

QTEST_GUILESS_MAIN(TestMaskTargetsCropped)
#include "test_mask_targets_cropped.moc"

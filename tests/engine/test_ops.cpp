// The detection ops (engine/ops) other than RoIAlign (test_roi_align): registered with the
// dispatcher; NMS, batched NMS, box IoU and the box coder equal to torchvision.ops and BoxCoder
// on the parity data of ops_parity.py (run live with MRCNN_PYTHON) and to slow, obvious
// references; NMS and RoIAlign in float under autocast; and, where a GPU exists, the CUDA
// kernels equal to the CPU ones.
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <numeric>

#include "engine/ops/box_coder.h"
#include "engine/ops/box_iou.h"
#include "engine/ops/nms.h"
#include "engine/ops/roi_align.h"
#include "tests/engine/ops_test_support.h"

namespace {

using namespace mrcnn::testing::ops_support;
namespace ops = mrcnn::ops;

// Greedy NMS by its definition: visit boxes by decreasing score, keep one unless it
// overlaps a kept box by IoU > threshold; equal scores by increasing index.
std::vector<int64_t> nmsReference(const at::Tensor& boxes, const at::Tensor& scores,
                                  double threshold) {
  const at::Tensor b = boxes.to(at::kDouble).contiguous();
  const at::Tensor s = scores.to(at::kDouble).contiguous();
  const auto ba = b.accessor<double, 2>();
  const auto sa = s.accessor<double, 1>();
  std::vector<int64_t> order(static_cast<size_t>(b.size(0)));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return sa[i] > sa[j]; });
  auto iou = [&](int64_t i, int64_t j) {
    const double w = std::max(0.0, std::min(ba[i][2], ba[j][2]) - std::max(ba[i][0], ba[j][0]));
    const double h = std::max(0.0, std::min(ba[i][3], ba[j][3]) - std::max(ba[i][1], ba[j][1]));
    const double ai = (ba[i][2] - ba[i][0]) * (ba[i][3] - ba[i][1]);
    const double aj = (ba[j][2] - ba[j][0]) * (ba[j][3] - ba[j][1]);
    return w * h / (ai + aj - w * h);
  };
  std::vector<int64_t> kept;
  for (int64_t i : order) {
    if (std::none_of(kept.begin(), kept.end(), [&](int64_t k) { return iou(k, i) > threshold; })) {
      kept.push_back(i);
    }
  }
  return kept;
}

}  // namespace

class TestOps : public QObject {
  Q_OBJECT

  OpsParity parity_;  // the parity data, made in initTestCase

 private slots:
  void initTestCase() {
    torch::manual_seed(1234);
    at::set_num_threads(2);
    parity_.make();
  }

  // reachable by name, with every kernel, without touching the C++ wrappers.
  void opsAreRegisteredWithTheDispatcher() {
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const char* name :
         {"mrcnn::roi_align", "mrcnn::_roi_align_backward", "mrcnn::multilevel_roi_align",
          "mrcnn::_multilevel_roi_align_backward", "mrcnn::nms", "mrcnn::nms_keep_mask",
          "mrcnn::box_iou", "mrcnn::encode_boxes", "mrcnn::decode_boxes"}) {
      const c10::OperatorHandle op = dispatcher.findSchemaOrThrow(name, "");
      QVERIFY2(op.hasKernelForDispatchKey(c10::DispatchKey::CPU), name);
#ifdef MRCNN_OPS_HAS_CUDA
      QVERIFY2(op.hasKernelForDispatchKey(c10::DispatchKey::CUDA), name);
#endif
    }
    const c10::OperatorHandle roi_align = dispatcher.findSchemaOrThrow("mrcnn::roi_align", "");
    QVERIFY(roi_align.hasKernelForDispatchKey(c10::DispatchKey::Autograd));
    QVERIFY(dispatcher.findSchemaOrThrow("mrcnn::batched_nms", "")
                .hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd));

    const at::Tensor x = torch::randn({1, 2, 5, 5});
    const at::Tensor rois = torch::tensor({{0.0f, 0.5f, 0.5f, 3.5f, 4.0f}});
    const at::Tensor via_dispatcher =
        roi_align
            .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double, int64_t, int64_t,
                              int64_t, bool)>()
            .call(x, rois, 1.0, 2, 2, 2, true);
    QCOMPARE(via_dispatcher.sizes(), (at::IntArrayRef{1, 2, 2, 2}));
    QVERIFY(torch::equal(via_dispatcher, ops::roi_align(x, rois, 1.0, 2, 2, 2, true)));
  }

  // Under mixed precision the features are bfloat16 while the RoIs stay float: without
  // autocast kernels roi_align refuses the dtype mismatch.
  void roiAlignAndNmsRunInFloatUnderAutocast() {
    const at::Tensor x = torch::randn({1, 4, 10, 10});
    const at::Tensor rois = randomRois(5, 1, 10, 10, at::kFloat);
    const at::Tensor boxes = randomBoxes(200, 50, at::kFloat);
    const at::Tensor scores = torch::rand({200}).to(at::kBFloat16);
    at::Tensor out, kept;
    {
      struct AutocastCpu {
        AutocastCpu() {
          at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
          at::autocast::set_autocast_enabled(at::kCPU, true);
        }
        ~AutocastCpu() {
          at::autocast::set_autocast_enabled(at::kCPU, false);
          at::autocast::clear_cache();
        }
      } autocast;
      out = ops::roi_align(x.to(at::kBFloat16), rois, 1.0, 3, 3, 2, true);
      kept = ops::nms(boxes, scores, 0.5);
    }
    QCOMPARE(out.scalar_type(), at::kBFloat16);
    QVERIFY(maxAbsDiff(out, ops::roi_align(x.to(at::kBFloat16).to(at::kFloat), rois, 1.0, 3, 3, 2,
                                           true)) < 0.02);
    QCOMPARE(toVector(kept), toVector(ops::nms(boxes, scores.to(at::kFloat), 0.5)));
  }

  // ---- NMS ----

  void nmsMatchesTorchvision() {
    if (!parity_.configured()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parity_.ready()) return;
    int count = 0;
    for (const Dict& c : casesOf(parity_.dict(), "nms")) {
      const at::Tensor boxes = tensorAt(c, "boxes");
      const at::Tensor scores = tensorAt(c, "scores");
      const double threshold = doubleAt(c, "iou_threshold");
      const std::vector<int64_t> expected = toVector(tensorAt(c, "keep"));
      const std::vector<int64_t> kept = toVector(ops::nms(boxes, scores, threshold));
      QVERIFY2(kept == expected,
               qPrintable(QString("case %1 (%2 boxes, threshold %3): got %4, torchvision %5")
                              .arg(count)
                              .arg(boxes.size(0))
                              .arg(threshold)
                              .arg(describe(kept), describe(expected))));
      QCOMPARE(toVector(ops::nms(transposedView(boxes), scores, threshold)), expected);
      ++count;
    }
    qInfo("nms vs torchvision: %d cases (ties, IoU at the threshold, empty, 5000 boxes) equal",
          count);
  }

  // IoU exactly at the threshold keeps the box ("> threshold" suppresses), as torchvision.
  void nmsKeepsIouEqualToTheThreshold() {
    const at::Tensor boxes = torch::tensor({{0.0f, 0.0f, 2.0f, 1.0f}, {0.0f, 0.0f, 1.0f, 1.0f}});
    const at::Tensor scores = torch::tensor({0.9f, 0.8f});
    QCOMPARE(toVector(ops::nms(boxes, scores, 0.5)), (std::vector<int64_t>{0, 1}));
    QCOMPARE(toVector(ops::nms(boxes, scores, 0.49)), (std::vector<int64_t>{0}));
    QCOMPARE(ops::nms(at::zeros({0, 4}), at::zeros({0}), 0.5).numel(), int64_t{0});
    QCOMPARE(ops::nms(at::zeros({0, 4}), at::zeros({0}), 0.5).scalar_type(), at::kLong);
  }

  // Ties included: equal scores are visited by increasing index.
  void nmsMatchesASlowReference() {
    for (const int64_t n : {1, 7, 300, 1500}) {
      const at::Tensor boxes = randomBoxes(n, 200, at::kDouble);
      const at::Tensor scores = torch::randint(0, std::max<int64_t>(n / 10, 2), {n}, at::kDouble);
      for (const double threshold : {0.0, 0.3, 0.7, 1.0}) {
        const std::vector<int64_t> kept = toVector(ops::nms(boxes, scores, threshold));
        const std::vector<int64_t> expected = nmsReference(boxes, scores, threshold);
        QVERIFY2(kept == expected, qPrintable(QString("n=%1 threshold=%2: %3 vs %4")
                                                  .arg(n)
                                                  .arg(threshold)
                                                  .arg(describe(kept), describe(expected))));
      }
    }
  }

  void batchedNmsMatchesTorchvision() {
    if (!parity_.configured()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parity_.ready()) return;
    int count = 0;
    for (const Dict& c : casesOf(parity_.dict(), "batched_nms")) {
      const at::Tensor boxes = tensorAt(c, "boxes");
      const std::vector<int64_t> expected = toVector(tensorAt(c, "keep"));
      const std::vector<int64_t> kept = toVector(ops::batched_nms(
          boxes, tensorAt(c, "scores"), tensorAt(c, "idxs"), doubleAt(c, "iou_threshold")));
      QVERIFY2(kept == expected, qPrintable(QString("case %1 (%2 boxes): got %3, torchvision %4")
                                                .arg(count)
                                                .arg(boxes.size(0))
                                                .arg(describe(kept), describe(expected))));
      ++count;
    }
    qInfo("batched_nms vs torchvision: %d cases (offset trick and per-class paths) equal", count);
  }

  // Boxes of different categories never suppress each other, on both paths.
  void batchedNmsKeepsCategoriesApart() {
    for (const int64_t n : {100, 1500}) {  // 400 and 6000 coordinates: both sides of 4000
      const at::Tensor boxes = randomBoxes(n, 50, at::kFloat);
      const at::Tensor scores = torch::rand({n});
      const at::Tensor idxs = torch::randint(0, 4, {n}, at::kLong);
      std::vector<int64_t> expected;
      for (int64_t cls = 0; cls < 4; ++cls) {
        const at::Tensor members = (idxs == cls).nonzero().squeeze(1);
        for (int64_t k : toVector(
                 ops::nms(boxes.index_select(0, members), scores.index_select(0, members), 0.5))) {
          expected.push_back(members[k].item<int64_t>());
        }
      }
      const auto sa = scores.accessor<float, 1>();
      std::sort(expected.begin(), expected.end(),
                [&](int64_t a, int64_t b) { return sa[a] > sa[b]; });
      QCOMPARE(toVector(ops::batched_nms(boxes, scores, idxs, 0.5)), expected);
    }
  }

  // The batched mask form: per image, per category, the valid boxes' own NMS, and nothing
  // else kept; ties in the scores included.
  void nmsKeepMaskIsPerCategoryNmsOfTheValidBoxes() {
    const int64_t images = 3, n = 700;
    at::Tensor boxes = at::stack({randomBoxes(n, 60, at::kFloat), randomBoxes(n, 60, at::kFloat),
                                  randomBoxes(n, 60, at::kFloat)});
    const at::Tensor scores = torch::randint(0, 50, {images, n}).to(at::kFloat) / 50;
    const at::Tensor categories = torch::randint(0, 4, {images, n}, at::kLong);
    const at::Tensor valid = torch::rand({images, n}) > 0.3;
    for (const double threshold : {0.3, 0.7}) {
      const at::Tensor keep = ops::nms_keep_mask(boxes, scores, categories, valid, threshold);
      QCOMPARE(keep.scalar_type(), at::kBool);
      for (int64_t i = 0; i < images; ++i) {
        at::Tensor expected = torch::zeros({n}, at::kBool);
        for (int64_t cls = 0; cls < 4; ++cls) {
          const at::Tensor members = ((categories[i] == cls) & valid[i]).nonzero().squeeze(1);
          const at::Tensor kept = ops::nms(boxes[i].index_select(0, members),
                                           scores[i].index_select(0, members), threshold);
          expected.index_fill_(0, members.index_select(0, kept), true);
        }
        QVERIFY2(torch::equal(keep[i], expected),
                 qPrintable(QString("image %1, threshold %2: %3 kept, expected %4")
                                .arg(i)
                                .arg(threshold)
                                .arg(keep[i].sum().item<int64_t>())
                                .arg(expected.sum().item<int64_t>())));
      }
    }
    // An invalid box neither is kept nor suppresses: the best box, invalid, over the second.
    const at::Tensor two = torch::tensor({{{0.f, 0.f, 10.f, 10.f}, {0.f, 0.f, 10.f, 9.f}}});
    const at::Tensor keep =
        ops::nms_keep_mask(two, torch::tensor({{0.9f, 0.8f}}), torch::zeros({1, 2}, at::kLong),
                           torch::tensor({{false, true}}), 0.5);
    QVERIFY(torch::equal(keep, torch::tensor({{false, true}})));
    QCOMPARE(
        ops::nms_keep_mask(torch::zeros({2, 0, 4}), torch::zeros({2, 0}),
                           torch::zeros({2, 0}, at::kLong), torch::zeros({2, 0}, at::kBool), 0.5)
            .sizes(),
        (at::IntArrayRef{2, 0}));
    const std::string e = errorOf([&] {
      ops::nms_keep_mask(two, torch::tensor({{0.9f, 0.8f}}), torch::zeros({1, 2}, at::kLong),
                         torch::tensor({{1, 1}}, at::kInt), 0.5);
    });
    QVERIFY2(
        e.find("nms_keep_mask: valid must be bool [B, K] = [1, 2], got Int") != std::string::npos,
        e.c_str());
  }

  // ---- Box IoU and the box coder ----

  void boxIouMatchesTorchvision() {
    if (!parity_.configured()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parity_.ready()) return;
    double worst = 0;
    for (const Dict& c : casesOf(parity_.dict(), "box_iou")) {
      const at::Tensor a = tensorAt(c, "boxes1"), b = tensorAt(c, "boxes2");
      const at::Tensor iou = ops::box_iou(a, b);
      const double diff = maxAbsDiff(iou, tensorAt(c, "iou"));
      QVERIFY2(
          diff == 0.0,
          qPrintable(QString("%1x%2: max abs diff %3").arg(a.size(0)).arg(b.size(0)).arg(diff)));
      QCOMPARE(iou.scalar_type(), tensorAt(c, "iou").scalar_type());
      QVERIFY(torch::equal(ops::box_iou(transposedView(a), slicedView(b)).nan_to_num(-1),
                           iou.nan_to_num(-1)));
      worst = std::max(worst, diff);
    }
    qInfo("box_iou vs torchvision: max abs diff %.3g", worst);
  }

  void boxCoderMatchesTorchvision() {
    if (!parity_.configured()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parity_.ready()) return;
    QCOMPARE(ops::kDefaultBoxXformClip, doubleAt(parity_.dict(), "log_1000_16"));
    double worst_encode = 0, worst_decode = 0;
    for (const Dict& c : casesOf(parity_.dict(), "box_coder")) {
      const at::Tensor w = tensorAt(c, "weights");
      const ops::BoxCoderWeights weights{w[0].item<double>(), w[1].item<double>(),
                                         w[2].item<double>(), w[3].item<double>()};
      const at::Tensor reference = tensorAt(c, "reference_boxes");
      const at::Tensor proposals = tensorAt(c, "proposals");
      const at::Tensor codes = tensorAt(c, "rel_codes");
      const bool is_double = codes.scalar_type() == at::kDouble;
      const double tolerance = is_double ? 1e-13 : 1e-6;
      const QString what = QString("%1, weights (%2, %3, %4, %5)")
                               .arg(c10::toString(codes.scalar_type()))
                               .arg(weights.wx)
                               .arg(weights.wy)
                               .arg(weights.ww)
                               .arg(weights.wh);
      const at::Tensor encoded = ops::encode_boxes(reference, proposals, weights);
      const double de = maxRelDiff(encoded, tensorAt(c, "encoded"));
      QVERIFY2(de <= tolerance, qPrintable(what + ": encode max rel diff " + QString::number(de)));
      // Decoding subtracts half the width from the centre: an ulp of difference in exp
      // (ATen's vectorised exp against the C library's) is measured against the size of the
      // coordinates, not of their difference.
      const at::Tensor decoded =
          ops::decode_boxes(codes, proposals, weights, doubleAt(c, "bbox_xform_clip"));
      const at::Tensor expected_decoded = tensorAt(c, "decoded");
      const double dd = maxAbsDiff(decoded, expected_decoded) /
                        std::max(1.0, expected_decoded.abs().max().item<double>());
      QVERIFY2(dd <= tolerance, qPrintable(what + ": decode max abs diff / max |coordinate| " +
                                           QString::number(dd)));
      QVERIFY(torch::equal(ops::decode_boxes(transposedView(codes), slicedView(proposals), weights),
                           decoded));
      if (!is_double) {
        worst_encode = std::max(worst_encode, de);
        worst_decode = std::max(worst_decode, dd);
      }
    }
    qInfo(
        "box coder vs torchvision BoxCoder (float): encode max rel diff %.3g, decode max abs "
        "diff / max |coordinate| %.3g",
        worst_encode, worst_decode);
  }

  // Decoding clamps dw and dh at log(1000 / 16): a huge predicted scale gives a box exactly
  // 62.5 times wider, not an overflow.
  void decodeClampsTheScale() {
    const at::Tensor boxes = torch::tensor({{10.0, 20.0, 30.0, 60.0}}, at::kDouble);
    const at::Tensor codes = torch::tensor({{0.0, 0.0, 100.0, -1.0}}, at::kDouble);
    const at::Tensor out = ops::decode_boxes(codes, boxes, {});
    QVERIFY(std::abs((out[0][2] - out[0][0]).item<double>() - 20.0 * 62.5) < 1e-9);
    QVERIFY(std::abs((out[0][3] - out[0][1]).item<double>() - 40.0 * std::exp(-1.0)) < 1e-12);
    // Round trip: decode(encode(gt, p), p) == gt.
    const at::Tensor p = randomBoxes(50, 300, at::kDouble);
    const at::Tensor gt = randomBoxes(50, 300, at::kDouble);
    const ops::BoxCoderWeights w{10, 10, 5, 5};
    QVERIFY(maxAbsDiff(ops::decode_boxes(ops::encode_boxes(gt, p, w), p, w), gt) < 1e-9);
    QCOMPARE(ops::decode_boxes(at::zeros({0, 8}), at::zeros({0, 4}), w).sizes(),
             (at::IntArrayRef{0, 8}));
    QCOMPARE(ops::box_iou(at::zeros({0, 4}, at::kDouble), p).sizes(), (at::IntArrayRef{0, 50}));
  }

  // ---- CUDA against the CPU ----

  void cudaNmsMatchesCpu() {
    SKIP_WITHOUT_GPU();
    for (const int64_t n : {0, 1, 63, 64, 65, 1000, 5000}) {
      const at::Tensor boxes = randomBoxes(n, 500, at::kFloat);
      const at::Tensor scores =
          torch::randperm(n, at::kFloat) / static_cast<float>(std::max<int64_t>(n, 1));
      for (const double threshold : {0.3, 0.5, 0.7}) {
        QCOMPARE(toVector(ops::nms(boxes.cuda(), scores.cuda(), threshold)),
                 toVector(ops::nms(boxes, scores, threshold)));
      }
      const at::Tensor idxs = torch::randint(0, 5, {n}, at::kLong);
      QCOMPARE(toVector(ops::batched_nms(boxes.cuda(), scores.cuda(), idxs.cuda(), 0.5)),
               toVector(ops::batched_nms(boxes, scores, idxs, 0.5)));
    }
  }

  // The greedy pass on the device: the same mask as on the CPU, up to a pyramid's 10000
  // candidates an image.
  void cudaNmsKeepMaskMatchesCpu() {
    SKIP_WITHOUT_GPU();
    for (const int64_t n : {1, 64, 65, 2000, 10000}) {
      at::Tensor boxes =
          at::stack({randomBoxes(n, 800, at::kFloat), randomBoxes(n, 800, at::kFloat)});
      const at::Tensor scores = torch::rand({2, n});
      const at::Tensor categories = torch::randint(0, 5, {2, n}, at::kLong);
      const at::Tensor valid = torch::rand({2, n}) > 0.2;
      const at::Tensor cpu = ops::nms_keep_mask(boxes, scores, categories, valid, 0.7);
      const at::Tensor gpu =
          ops::nms_keep_mask(boxes.cuda(), scores.cuda(), categories.cuda(), valid.cuda(), 0.7);
      QVERIFY2(torch::equal(gpu.cpu(), cpu), qPrintable(QString("n=%1").arg(n)));
    }
  }

  void cudaBoxOpsMatchCpu() {
    SKIP_WITHOUT_GPU();
    const at::Tensor a = randomBoxes(300, 800, at::kFloat);
    const at::Tensor b = randomBoxes(200, 800, at::kFloat);
    QVERIFY(maxAbsDiff(ops::box_iou(a.cuda(), b.cuda()), ops::box_iou(a, b)) < 1e-6);
    const ops::BoxCoderWeights w{10, 10, 5, 5};
    const at::Tensor gt = randomBoxes(300, 800, at::kFloat);
    QVERIFY(maxRelDiff(ops::encode_boxes(gt.cuda(), a.cuda(), w), ops::encode_boxes(gt, a, w)) <
            1e-5);
    const at::Tensor codes = torch::randn({300, 12});
    const at::Tensor decoded = ops::decode_boxes(codes, a, w);
    QVERIFY(maxAbsDiff(ops::decode_boxes(codes.cuda(), a.cuda(), w), decoded) /
                decoded.abs().max().item<double>() <
            1e-5);
  }
};

QTEST_GUILESS_MAIN(TestOps)
#include "test_ops.moc"

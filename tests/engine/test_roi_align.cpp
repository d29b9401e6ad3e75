// RoIAlign (engine/ops/roi_align): equal to torchvision.ops.roi_align, forward and backward,
// on the parity data of ops_parity.py (run live with MRCNN_PYTHON); channels-last maps read in
// place; equal to a slow, obvious reference; its gradient checked against finite differences;
// bad inputs refused clearly; and, where a GPU exists, the CUDA kernel equal to the CPU one.
#include "engine/ops/roi_align.h"
#include "tests/engine/ops_test_support.h"

namespace {

using namespace mrcnn::testing::ops_support;
namespace ops = mrcnn::ops;

// ---- Slow, obvious references ----

// Bilinear sampling of one plane at (y, x), by the rules RoIAlign states: nothing from
// points more than a pixel outside; otherwise clamp to the map and interpolate.
double bilinear(const at::TensorAccessor<double, 2>& p, int64_t h, int64_t w, double y, double x) {
  if (y < -1.0 || y > static_cast<double>(h) || x < -1.0 || x > static_cast<double>(w)) return 0;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y0 = static_cast<int64_t>(std::floor(y));
  int64_t x0 = static_cast<int64_t>(std::floor(x));
  int64_t y1 = y0 + 1;
  int64_t x1 = x0 + 1;
  if (y0 >= h - 1) {
    y0 = y1 = h - 1;
    y = static_cast<double>(y0);
  }
  if (x0 >= w - 1) {
    x0 = x1 = w - 1;
    x = static_cast<double>(x0);
  }
  const double ly = y - static_cast<double>(y0);
  const double lx = x - static_cast<double>(x0);
  return (1 - ly) * (1 - lx) * p[y0][x0] + (1 - ly) * lx * p[y0][x1] + ly * (1 - lx) * p[y1][x0] +
         ly * lx * p[y1][x1];
}

at::Tensor roiAlignReference(const at::Tensor& input, const at::Tensor& rois, double scale,
                             int64_t ph, int64_t pw, int64_t sampling_ratio, bool aligned) {
  const at::Tensor in = input.to(at::kDouble).contiguous();
  const at::Tensor r = rois.to(at::kDouble).contiguous();
  const int64_t k = r.size(0), c = in.size(1), h = in.size(2), w = in.size(3);
  at::Tensor out = at::zeros({k, c, ph, pw}, at::kDouble);
  const auto ia = in.accessor<double, 4>();
  const auto ra = r.accessor<double, 2>();
  auto oa = out.accessor<double, 4>();
  for (int64_t n = 0; n < k; ++n) {
    const auto b = static_cast<int64_t>(ra[n][0]);
    const double off = aligned ? 0.5 : 0.0;
    const double x1 = ra[n][1] * scale - off, y1 = ra[n][2] * scale - off;
    double rw = ra[n][3] * scale - off - x1, rh = ra[n][4] * scale - off - y1;
    if (!aligned) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / static_cast<double>(ph), bw = rw / static_cast<double>(pw);
    const int64_t gh = sampling_ratio > 0 ? sampling_ratio : static_cast<int64_t>(std::ceil(bh));
    const int64_t gw = sampling_ratio > 0 ? sampling_ratio : static_cast<int64_t>(std::ceil(bw));
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t i = 0; i < ph; ++i) {
        for (int64_t j = 0; j < pw; ++j) {
          double sum = 0;
          for (int64_t iy = 0; iy < gh; ++iy) {
            for (int64_t ix = 0; ix < gw; ++ix) {
              const double y = y1 + static_cast<double>(i) * bh +
                               (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
              const double x = x1 + static_cast<double>(j) * bw +
                               (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
              sum += bilinear(ia[b][ch], h, w, y, x);
            }
          }
          oa[n][ch][i][j] = sum / static_cast<double>(std::max<int64_t>(gh * gw, 1));
        }
      }
    }
  }
  return out;
}

}  // namespace

class TestRoiAlign : public QObject {
  Q_OBJECT

  OpsParity parity_;  // the parity data, made in initTestCase

 private slots:
  void initTestCase() {
    torch::manual_seed(1234);
    at::set_num_threads(2);
    parity_.make();
  }

  void roiAlignMatchesTorchvision() {
    if (!parity_.configured()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parity_.ready()) return;
    double worst[2] = {0, 0};  // float, double
    int count = 0;
    for (const Dict& c : casesOf(parity_.dict(), "roi_align")) {
      const at::Tensor input = tensorAt(c, "input");
      const at::Tensor rois = tensorAt(c, "rois");
      const double scale = doubleAt(c, "spatial_scale");
      const int64_t ph = intAt(c, "pooled_height"), pw = intAt(c, "pooled_width");
      const int64_t sr = intAt(c, "sampling_ratio");
      const bool aligned = boolAt(c, "aligned");
      const at::Tensor expected = tensorAt(c, "output");
      const at::Tensor out = ops::roi_align(input, rois, scale, ph, pw, sr, aligned);
      const double diff = maxAbsDiff(out, expected);
      const QString what = QString("case %1: %2 aligned=%3 sampling_ratio=%4 scale=%5 K=%6")
                               .arg(count)
                               .arg(c10::toString(input.scalar_type()))
                               .arg(aligned)
                               .arg(sr)
                               .arg(scale)
                               .arg(rois.size(0));
      QVERIFY2(diff <= (input.scalar_type() == at::kDouble ? 1e-12 : 1e-5),
               qPrintable(what + ": max abs diff " + QString::number(diff)));
      worst[input.scalar_type() == at::kDouble ? 1 : 0] =
          std::max(worst[input.scalar_type() == at::kDouble ? 1 : 0], diff);
      // Non-contiguous input and RoIs give the very same numbers.
      QVERIFY2(torch::equal(ops::roi_align(transposedView(input), rois, scale, ph, pw, sr, aligned),
                            out),
               qPrintable(what + ": transposed input"));
      QVERIFY2(
          torch::equal(
              ops::roi_align(slicedView(input), slicedView(rois), scale, ph, pw, sr, aligned), out),
          qPrintable(what + ": sliced input and rois"));
      ++count;
    }
    QVERIFY(count >= 20);
    qInfo("roi_align forward vs torchvision, %d cases: max abs diff float %.3g, double %.3g", count,
          worst[0], worst[1]);
  }

  void roiAlignBackwardMatchesTorchvision() {
    if (!parity_.configured()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parity_.ready()) return;
    double worst[2] = {0, 0};
    int count = 0;
    for (const Dict& c : casesOf(parity_.dict(), "roi_align")) {
      const at::Tensor input = tensorAt(c, "input");
      const at::Tensor rois = tensorAt(c, "rois");
      const double scale = doubleAt(c, "spatial_scale");
      const int64_t ph = intAt(c, "pooled_height"), pw = intAt(c, "pooled_width");
      const int64_t sr = intAt(c, "sampling_ratio");
      const bool aligned = boolAt(c, "aligned");
      const at::Tensor grad_output = tensorAt(c, "grad_output");
      const at::Tensor expected = tensorAt(c, "grad_input");
      const bool is_double = input.scalar_type() == at::kDouble;
      const QString what = QString("case %1 (%2, aligned=%3, sampling_ratio=%4, scale=%5)")
                               .arg(count)
                               .arg(c10::toString(input.scalar_type()))
                               .arg(aligned)
                               .arg(sr)
                               .arg(scale);

      // Through autograd, as the model's loss.backward() will call it.
      const at::Tensor x = input.clone().requires_grad_(true);
      ops::roi_align(x, rois, scale, ph, pw, sr, aligned).backward(grad_output);
      const double diff = maxAbsDiff(x.grad(), expected);
      QVERIFY2(diff <= (is_double ? 1e-12 : 1e-5),
               qPrintable(what + ": max abs diff " + QString::number(diff)));
      worst[is_double ? 1 : 0] = std::max(worst[is_double ? 1 : 0], diff);

      // The backward op directly, with a non-contiguous incoming gradient.
      const at::Tensor direct =
          ops::roi_align_backward(transposedView(grad_output), rois, scale, ph, pw, input.size(0),
                                  input.size(1), input.size(2), input.size(3), sr, aligned);
      QVERIFY2(torch::equal(direct, x.grad()), qPrintable(what + ": strided grad_output"));
      ++count;
    }
    qInfo("roi_align backward vs torchvision, %d cases: max abs diff float %.3g, double %.3g",
          count, worst[0], worst[1]);
  }

  // Channels-last features are read where they are: the same bits as from NCHW ones, forward
  // and backward (random maps, RoIs partly outside them, both alignments, fixed and adaptive
  // sampling), and the result and the input gradient come channels-last.
  void roiAlignReadsChannelsLastInPlace() {
    torch::manual_seed(11);
    int count = 0;
    for (const at::ScalarType t : {at::kFloat, at::kDouble}) {
      for (const bool aligned : {false, true}) {
        for (const int64_t sr : {0, 2}) {
          const at::Tensor x = torch::randn({2, 24, 19, 27}, t);
          const at::Tensor rois = randomRois(30, 2, 76, 108, t);
          const at::Tensor nhwc = x.contiguous(at::MemoryFormat::ChannelsLast);
          const at::Tensor expected = ops::roi_align(x, rois, 0.25, 7, 6, sr, aligned);
          const at::Tensor out = ops::roi_align(nhwc, rois, 0.25, 7, 6, sr, aligned);
          QVERIFY(expected.is_contiguous());
          QVERIFY(out.is_contiguous(at::MemoryFormat::ChannelsLast) && !out.is_contiguous());
          QVERIFY2(torch::equal(out, expected), "forward: NHWC and NCHW differ");

          const at::Tensor go = torch::randn(expected.sizes(), t);
          const at::Tensor a = x.clone().requires_grad_(true);
          ops::roi_align(a, rois, 0.25, 7, 6, sr, aligned).backward(go);
          const at::Tensor b = nhwc.clone().requires_grad_(true);
          ops::roi_align(b, rois, 0.25, 7, 6, sr, aligned).backward(go);
          QVERIFY(b.grad().is_contiguous(at::MemoryFormat::ChannelsLast));
          QVERIFY2(torch::equal(b.grad(), a.grad()), "backward: NHWC and NCHW differ");
          // The backward op directly, a channels-last incoming gradient into either layout.
          const at::Tensor go_nhwc = go.contiguous(at::MemoryFormat::ChannelsLast);
          for (const bool channels_last : {false, true}) {
            const at::Tensor g = ops::roi_align_backward(go_nhwc, rois, 0.25, 7, 6, 2, 24, 19, 27,
                                                         sr, aligned, channels_last);
            QCOMPARE(g.is_contiguous(at::MemoryFormat::ChannelsLast), channels_last);
            QVERIFY(torch::equal(g, a.grad()));
          }
          ++count;
        }
      }
    }
    // One channel, and an empty set of RoIs.
    const at::Tensor one = torch::randn({1, 1, 8, 9}).contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor rois = randomRois(5, 1, 8, 9, at::kFloat);
    QVERIFY(torch::equal(ops::roi_align(one, rois, 1.0, 3, 3, 2, true),
                         ops::roi_align(one.contiguous(), rois, 1.0, 3, 3, 2, true)));
    QCOMPARE(ops::roi_align(torch::randn({1, 4, 6, 6}).contiguous(at::MemoryFormat::ChannelsLast),
                            at::zeros({0, 5}), 1.0, 2, 2, 0, true)
                 .numel(),
             int64_t{0});
    QCOMPARE(count, 8);
  }

  // Guards against a rule of RoIAlign implemented wrongly in both torchvision's reading and
  // ours: the reference restates the rules directly, in double.
  void roiAlignMatchesASlowReference() {
    double worst = 0;
    for (const bool aligned : {false, true}) {
      for (const int64_t sr : {0, 2, 3}) {
        for (const double scale : {1.0, 0.5, 0.25}) {
          const at::Tensor input = torch::randn({2, 3, 11, 13}, at::kDouble);
          const at::Tensor rois = randomRois(9, 2, 11 / scale, 13 / scale, at::kDouble);
          const at::Tensor out = ops::roi_align(input, rois, scale, 4, 5, sr, aligned);
          const at::Tensor ref = roiAlignReference(input, rois, scale, 4, 5, sr, aligned);
          const double diff = maxAbsDiff(out, ref);
          QVERIFY2(diff < 1e-12, qPrintable(QString("aligned=%1 sampling_ratio=%2 scale=%3: %4")
                                                .arg(aligned)
                                                .arg(sr)
                                                .arg(scale)
                                                .arg(diff)));
          worst = std::max(worst, diff);
          // float agrees with the double reference to float precision.
          const at::Tensor out_f =
              ops::roi_align(input.to(at::kFloat), rois.to(at::kFloat), scale, 4, 5, sr, aligned);
          QVERIFY(maxAbsDiff(out_f, ref) < 1e-4);
        }
      }
    }
    qInfo("roi_align vs the slow double reference: max abs diff %.3g", worst);
  }

  // The backward kernel must be the adjoint of the forward one: central differences of
  // <roi_align(x), w> in double against the analytical gradient.
  void roiAlignGradientCheck() {
    const at::Tensor x = torch::randn({2, 3, 6, 7}, at::kDouble);
    const at::Tensor rois = torch::tensor({{0.0, 0.5, 1.0, 5.5, 4.0},
                                           {1.0, -1.0, 2.0, 3.3, 7.2},
                                           {0.0, 2.2, 0.1, 6.9, 5.9},
                                           {1.0, 3.0, 3.0, 3.0, 3.0},
                                           {1.0, 5.5, -0.7, 7.4, 1.2}},
                                          at::kDouble);
    double worst = 0;
    for (const bool aligned : {false, true}) {
      for (const int64_t sr : {0, 2}) {
        const at::Tensor w = torch::randn({5, 3, 3, 2}, at::kDouble);
        auto f = [&](const at::Tensor& in) {
          return (ops::roi_align(in, rois, 1.0, 3, 2, sr, aligned) * w).sum();
        };
        const at::Tensor xg = x.clone().requires_grad_(true);
        f(xg).backward();
        const at::Tensor analytical = xg.grad();
        at::Tensor numerical = at::zeros_like(x);
        const double eps = 1e-6;
        for (int64_t i = 0; i < x.numel(); ++i) {
          at::Tensor plus = x.clone(), minus = x.clone();
          plus.view(-1)[i] += eps;
          minus.view(-1)[i] -= eps;
          numerical.view(-1)[i] = (f(plus) - f(minus)).item<double>() / (2 * eps);
        }
        const double diff = maxAbsDiff(analytical, numerical);
        QVERIFY2(diff < 1e-6, qPrintable(QString("aligned=%1 sampling_ratio=%2: max abs diff %3")
                                             .arg(aligned)
                                             .arg(sr)
                                             .arg(diff)));
        QVERIFY(analytical.abs().sum().item<double>() > 0);  // the check is not vacuous
        worst = std::max(worst, diff);
      }
    }
    qInfo("roi_align gradcheck (double, central differences): max abs diff %.3g", worst);
  }

  void roiAlignRejectsBadInputsClearly() {
    const at::Tensor x = torch::randn({1, 2, 5, 5});
    const at::Tensor rois = torch::tensor({{0.0f, 0.5f, 0.5f, 3.5f, 4.0f}});
    auto message = [](auto&& call) -> QString {
      try {
        call();
      } catch (const c10::Error& e) {
        return QString::fromStdString(e.what_without_backtrace());
      }
      return "(no error)";
    };
    QVERIFY(message([&] {
              ops::roi_align(x[0], rois, 1.0, 2, 2, 2, true);
            }).contains("input must be a 4-D tensor"));
    QVERIFY(message([&] {
              ops::roi_align(x, rois.narrow(1, 0, 4), 1.0, 2, 2, 2, true);
            }).contains("rois must be a [K, 5] tensor"));
    QVERIFY(message([&] {
              ops::roi_align(x, rois.to(at::kDouble), 1.0, 2, 2, 2, true);
            }).contains("must have the same dtype"));
    QVERIFY(message([&] {
              ops::roi_align(x, rois, 1.0, 0, 2, 2, true);
            }).contains("pooled size must be positive"));
    const at::Tensor bad_batch = torch::tensor({{3.0f, 0.5f, 0.5f, 3.5f, 4.0f}});
    QVERIFY(message([&] {
              ops::roi_align(x, bad_batch, 1.0, 2, 2, 2, true);
            }).contains("batch index 3, outside [0, 1)"));
    // A gradient of the gradient is refused, not silently wrong.
    const at::Tensor xg = x.clone().requires_grad_(true);
    const at::Tensor out = ops::roi_align(xg, rois, 1.0, 2, 2, 2, true);
    const at::Tensor w = torch::randn(out.sizes()).requires_grad_(true);
    const at::Tensor g = torch::autograd::grad({(out * w).sum()}, {xg}, {}, true, true)[0];
    QVERIFY(g.requires_grad());
    QVERIFY(message([&] { g.sum().backward(); }).contains("double backward"));
  }

  void roiAlignEmptyAndReducedPrecision() {
    const at::Tensor x = torch::randn({2, 3, 9, 8});
    const at::Tensor none = ops::roi_align(x, at::zeros({0, 5}), 0.5, 7, 7, 0, true);
    QCOMPARE(none.sizes(), (at::IntArrayRef{0, 3, 7, 7}));
    const at::Tensor xg = x.clone().requires_grad_(true);
    ops::roi_align(xg, at::zeros({0, 5}), 0.5, 7, 7, 0, true).sum().backward();
    QVERIFY(torch::equal(xg.grad(), at::zeros_like(x)));
    // Half and bfloat16 are computed in float and rounded once: exactly the float result
    // of the same (rounded) inputs, rounded.
    const at::Tensor rois = randomRois(6, 2, 18, 16, at::kFloat);
    for (const at::ScalarType t : {at::kHalf, at::kBFloat16}) {
      const at::Tensor xt = x.to(t), rt = rois.to(t);
      const at::Tensor out = ops::roi_align(xt, rt, 0.5, 7, 7, 2, true);
      QCOMPARE(out.scalar_type(), t);
      QVERIFY(torch::equal(
          out, ops::roi_align(xt.to(at::kFloat), rt.to(at::kFloat), 0.5, 7, 7, 2, true).to(t)));
    }
  }

  // ---- CUDA against the CPU ----

  void cudaRoiAlignMatchesCpu() {
    SKIP_WITHOUT_GPU();
    for (const bool aligned : {false, true}) {
      for (const int64_t sr : {0, 2}) {
        for (const at::ScalarType t : {at::kFloat, at::kDouble}) {
          const at::Tensor x = torch::randn({2, 16, 25, 31}, t);
          const at::Tensor rois = randomRois(40, 2, 100, 124, t);
          const at::Tensor cpu = ops::roi_align(x, rois, 0.25, 7, 7, sr, aligned);
          const at::Tensor gpu =
              ops::roi_align(transposedView(x).cuda(), rois.cuda(), 0.25, 7, 7, sr, aligned);
          QVERIFY(maxAbsDiff(gpu, cpu) < (t == at::kDouble ? 1e-12 : 1e-5));
          const at::Tensor go = torch::randn(cpu.sizes(), t);
          const at::Tensor gcpu =
              ops::roi_align_backward(go, rois, 0.25, 7, 7, 2, 16, 25, 31, sr, aligned);
          const at::Tensor ggpu = ops::roi_align_backward(go.cuda(), rois.cuda(), 0.25, 7, 7, 2, 16,
                                                          25, 31, sr, aligned);
          QVERIFY(maxAbsDiff(ggpu, gcpu) < (t == at::kDouble ? 1e-12 : 1e-4));
          const at::Tensor xg = x.cuda().requires_grad_(true);
          ops::roi_align(xg, rois.cuda(), 0.25, 7, 7, sr, aligned).backward(go.cuda());
          QVERIFY(maxAbsDiff(xg.grad(), gcpu) < (t == at::kDouble ? 1e-12 : 1e-4));
          // Channels-last maps, read in place: the same result, in their layout.
          const at::Tensor xl =
              x.contiguous(at::MemoryFormat::ChannelsLast).cuda().requires_grad_(true);
          const at::Tensor out_l = ops::roi_align(xl, rois.cuda(), 0.25, 7, 7, sr, aligned);
          QVERIFY(out_l.is_contiguous(at::MemoryFormat::ChannelsLast));
          QVERIFY(maxAbsDiff(out_l, cpu) < (t == at::kDouble ? 1e-12 : 1e-5));
          out_l.backward(go.cuda());
          QVERIFY(xl.grad().is_contiguous(at::MemoryFormat::ChannelsLast));
          QVERIFY(maxAbsDiff(xl.grad(), gcpu) < (t == at::kDouble ? 1e-12 : 1e-4));
        }
        const at::Tensor x = torch::randn({1, 4, 10, 10});
        const at::Tensor rois = randomRois(8, 1, 40, 40, at::kFloat);
        const at::Tensor half = ops::roi_align(x.cuda().to(at::kHalf), rois.cuda().to(at::kHalf),
                                               0.25, 5, 5, sr, aligned);
        QVERIFY(maxAbsDiff(half, ops::roi_align(x, rois, 0.25, 5, 5, sr, aligned)) < 0.05);
      }
    }
    QCOMPARE(ops::roi_align(torch::randn({1, 2, 4, 4}).cuda(), at::zeros({0, 5}).cuda(), 1.0, 2, 2,
                            0, true)
                 .numel(),
             int64_t{0});
  }
};

QTEST_GUILESS_MAIN(TestRoiAlign)
#include "test_roi_align.moc"

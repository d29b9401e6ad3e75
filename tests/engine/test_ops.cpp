// The detection ops (engine/ops): registered with the dispatcher; equal to torchvision.ops
// and BoxCoder on the parity data of ops_parity.py (run live with MRCNN_PYTHON); equal to
// slow, obvious references; RoIAlign's gradient checked against finite differences; and,
// where a GPU exists, the CUDA kernels equal to the CPU ones.
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/cuda.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include "engine/ops/box_coder.h"
#include "engine/ops/box_iou.h"
#include "engine/ops/nms.h"
#include "engine/ops/roi_align.h"
#include "tests/common/reference_script.h"
#include "tests/engine/parity_file.h"

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
int64_t intAt(const Dict& d, const char* key) {
  return d.at(key).toInt();
}
bool boolAt(const Dict& d, const char* key) {
  return d.at(key).toBool();
}

std::vector<Dict> casesOf(const Dict& root, const char* op) {
  std::vector<Dict> cases;
  for (const c10::IValue& v : root.at(op).toList())
    cases.push_back(v.toGenericDict());
  return cases;
}

// max |a - b| over all elements; NaN in the same places counts as equal, NaN against a
// number as infinitely far.
double maxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return INFINITY;
  if (a.numel() == 0) return 0.0;
  const at::Tensor x = a.cpu().to(at::kDouble);
  const at::Tensor y = b.cpu().to(at::kDouble);
  if (!torch::equal(x.isnan(), y.isnan())) return INFINITY;
  const at::Tensor d = (x - y).abs().nan_to_num(0.0);
  return d.max().item<double>();
}

// max |a - b| / max(1, |b|).
double maxRelDiff(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return INFINITY;
  if (a.numel() == 0) return 0.0;
  const at::Tensor x = a.cpu().to(at::kDouble);
  const at::Tensor y = b.cpu().to(at::kDouble);
  return ((x - y).abs() / y.abs().clamp_min(1.0)).max().item<double>();
}

std::vector<int64_t> toVector(const at::Tensor& t) {
  const at::Tensor c = t.cpu().to(at::kLong).contiguous();
  return {c.const_data_ptr<int64_t>(), c.const_data_ptr<int64_t>() + c.numel()};
}

QString describe(const std::vector<int64_t>& v) {
  QStringList s;
  for (size_t i = 0; i < std::min<size_t>(v.size(), 12); ++i)
    s << QString::number(v[i]);
  return "[" + s.join(", ") + (v.size() > 12 ? ", ...]" : "]") + " (" + QString::number(v.size()) +
         ")";
}

// The same values with other strides: a transposed copy viewed back, and a slice of a
// wider tensor. Kernels that assume contiguity read garbage from these.
at::Tensor transposedView(const at::Tensor& t) {
  return t.transpose(-1, -2).contiguous().transpose(-1, -2);
}
at::Tensor slicedView(const at::Tensor& t) {
  return at::cat({t, t}, /*dim=*/1).narrow(1, 0, t.size(1));
}

#ifdef MRCNN_OPS_HAS_CUDA
constexpr const char* kNoGpu =
    "no GPU visible: the CUDA kernels are built and registered; these checks run where a GPU is";
#else
constexpr const char* kNoGpu = "LibTorch without CUDA: the CUDA kernels are not built";
#endif

#define SKIP_WITHOUT_GPU() \
  if (!torch::cuda::is_available()) QSKIP(kNoGpu)

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

at::Tensor randomBoxes(int64_t n, double size, at::ScalarType dtype) {
  const at::Tensor xy = torch::rand({n, 2}, at::kDouble) * size;
  const at::Tensor wh = torch::rand({n, 2}, at::kDouble) * size * 0.3 + 1.0;
  return at::cat({xy, xy + wh}, 1).to(dtype);
}

at::Tensor randomRois(int64_t k, int64_t batch, double img_h, double img_w, at::ScalarType dtype) {
  at::Tensor rois = at::empty({k, 5}, at::kDouble);
  rois.select(1, 0).copy_(torch::randint(0, batch, {k}, at::kDouble));
  const at::Tensor x1 = torch::rand({k}, at::kDouble) * img_w * 1.3 - 0.2 * img_w;
  const at::Tensor y1 = torch::rand({k}, at::kDouble) * img_h * 1.3 - 0.2 * img_h;
  rois.select(1, 1).copy_(x1);
  rois.select(1, 2).copy_(y1);
  rois.select(1, 3).copy_(x1 + torch::rand({k}, at::kDouble) * img_w * 0.6);
  rois.select(1, 4).copy_(y1 + torch::rand({k}, at::kDouble) * img_h * 0.6);
  return rois.to(dtype);
}

}  // namespace

class TestOps : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString python_;
  QString parityError_;  // why the parity data could not be made, when it could not
  c10::IValue parity_;   // the dict ops_parity.py saved

  Dict parity() const { return parity_.toGenericDict(); }

  // Parity tests skip when no Python is configured, and fail when it is and the script
  // does not deliver.
  bool parityReady() {
    if (!parityError_.isEmpty()) QTest::qFail(qPrintable(parityError_), __FILE__, __LINE__);
    return parityError_.isEmpty();
  }

 private slots:
  void initTestCase() {
    torch::manual_seed(1234);
    at::set_num_threads(2);
    python_ = qEnvironmentVariable("MRCNN_PYTHON");
    if (python_.isEmpty()) return;
    const QString out = dir_.filePath("ops_parity.pt");
    QString log;
    parityError_ = mrcnn::testing::runReferenceScript("tests/engine/ops_parity.py", {out}, &log);
    if (!parityError_.isEmpty()) return;
    qInfo("%s", qPrintable(log));
    parityError_ = mrcnn::testing::readParityFile(out, &parity_);
  }

  // A static library drops registration-only objects unless linked whole: the ops must be
  // reachable by name, with every kernel, without touching the C++ wrappers.
  void opsAreRegisteredWithTheDispatcher() {
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const char* name : {"mrcnn::roi_align", "mrcnn::_roi_align_backward", "mrcnn::nms",
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

  // ---- RoIAlign ----

  void roiAlignMatchesTorchvision() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    double worst[2] = {0, 0};  // float, double
    int count = 0;
    for (const Dict& c : casesOf(parity(), "roi_align")) {
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
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    double worst[2] = {0, 0};
    int count = 0;
    for (const Dict& c : casesOf(parity(), "roi_align")) {
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
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    int count = 0;
    for (const Dict& c : casesOf(parity(), "nms")) {
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
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    int count = 0;
    for (const Dict& c : casesOf(parity(), "batched_nms")) {
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

  // ---- Box IoU and the box coder ----

  void boxIouMatchesTorchvision() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    double worst = 0;
    for (const Dict& c : casesOf(parity(), "box_iou")) {
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
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no torchvision to compare with");
    if (!parityReady()) return;
    QCOMPARE(ops::kDefaultBoxXformClip, doubleAt(parity(), "log_1000_16"));
    double worst_encode = 0, worst_decode = 0;
    for (const Dict& c : casesOf(parity(), "box_coder")) {
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

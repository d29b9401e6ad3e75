// Multi-level RoIAlign in one op (engine/ops/multilevel_roi_align): the same bits as pooling
// each level's RoIs with roi_align and putting them back in order (the per-level loop it
// replaced, kept here as the reference), forward and backward, in both layouts, both sampling
// modes, float and double; RoIs kept in their own precision; bad input refused by name; and,
// where a GPU exists, the CUDA kernels equal to the CPU ones, NaN for a bad level, and
// MultiScaleRoIAlign's forward and backward without one host sync.
#include <ATen/autocast_mode.h>

#include "engine/model/multiscale_roi_align.h"
#include "engine/ops/multilevel_roi_align.h"
#include "engine/ops/roi_align.h"
#include "engine/runtime/sync_counter.h"
#include "tests/engine/ops_test_support.h"

namespace {

using namespace mrcnn::testing::ops_support;
namespace ops = mrcnn::ops;

// A pyramid of four maps, each half the previous one's size, and their scales.
struct Pyramid {
  std::vector<at::Tensor> maps;
  std::vector<double> scales;
};

Pyramid randomPyramid(int64_t batch, int64_t channels, int64_t height, int64_t width,
                      at::ScalarType dtype, bool channels_last) {
  Pyramid p;
  for (int l = 0; l < 4; ++l) {
    const int64_t h = std::max<int64_t>(height >> l, 1), w = std::max<int64_t>(width >> l, 1);
    at::Tensor m = torch::randn({batch, channels, h, w}, at::kDouble).to(dtype);
    if (channels_last) m = m.contiguous(at::MemoryFormat::ChannelsLast);
    p.maps.push_back(m);
    p.scales.push_back(std::ldexp(1.0, -(l + 2)));
  }
  return p;
}

// The per-level loop multilevel_roi_align replaced: each level's RoIs selected, pooled with
// roi_align, and put back in their rows.
at::Tensor perLevelReference(const Pyramid& p, const at::Tensor& rois, const at::Tensor& levels,
                             int64_t size, int64_t sampling_ratio, bool aligned) {
  const at::Tensor& first = p.maps[0];
  at::Tensor result = at::zeros({rois.size(0), first.size(1), size, size}, first.options())
                          .contiguous(first.suggest_memory_format());
  for (size_t l = 0; l < p.maps.size(); ++l) {
    const at::Tensor idx = at::where(levels == static_cast<int64_t>(l))[0];
    const at::Tensor pooled =
        ops::roi_align(p.maps[l], rois.index_select(0, idx).to(first.scalar_type()), p.scales[l],
                       size, size, sampling_ratio, aligned);
    result = result.index_put({idx}, pooled);
  }
  return result;
}

at::Tensor randomLevels(int64_t k, int64_t count) {
  return torch::randint(0, count, {k}, at::kLong);
}

}  // namespace

class TestMultilevelRoIAlign : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { torch::manual_seed(20261130); }

  void forwardEqualsPerLevelRoIAlign() {
    for (const at::ScalarType dtype : {at::kFloat, at::kDouble}) {
      for (const bool channels_last : {false, true}) {
        for (const int64_t sampling_ratio : {2, 0}) {
          for (const bool aligned : {false, true}) {
            const Pyramid p = randomPyramid(2, 5, 48, 64, dtype, channels_last);
            const at::Tensor rois = randomRois(70, 2, 192, 256, dtype);
            const at::Tensor levels = randomLevels(70, 4);
            const at::Tensor got = ops::multilevel_roi_align(p.maps, rois, levels, p.scales, 7, 7,
                                                             sampling_ratio, aligned);
            const at::Tensor want = perLevelReference(p, rois, levels, 7, sampling_ratio, aligned);
            QVERIFY2(torch::equal(got, want), qPrintable(QString("dtype %1, nhwc %2, sr %3, "
                                                                 "aligned %4: max diff %5")
                                                             .arg(c10::toString(dtype))
                                                             .arg(channels_last)
                                                             .arg(sampling_ratio)
                                                             .arg(aligned)
                                                             .arg(maxAbsDiff(got, want))));
            QCOMPARE(got.suggest_memory_format(), p.maps[0].suggest_memory_format());
          }
        }
      }
    }
  }

  // Double RoIs on float maps are read as float, as roi_align reads them after a cast; one
  // map is roi_align itself.
  void roisInTheirOwnPrecisionAndOneMap() {
    const Pyramid p = randomPyramid(2, 3, 40, 40, at::kFloat, false);
    const at::Tensor rois = randomRois(30, 2, 160, 160, at::kDouble);
    const at::Tensor levels = randomLevels(30, 4);
    QVERIFY(torch::equal(
        ops::multilevel_roi_align(p.maps, rois, levels, p.scales, 7, 7, 2, false),
        ops::multilevel_roi_align(p.maps, rois.to(at::kFloat), levels, p.scales, 7, 7, 2, false)));
    const at::Tensor one = ops::multilevel_roi_align({p.maps[1]}, rois, at::zeros({30}, at::kLong),
                                                     {p.scales[1]}, 5, 5, 0, true);
    QVERIFY(torch::equal(
        one, ops::roi_align(p.maps[1], rois.to(at::kFloat), p.scales[1], 5, 5, 0, true)));
  }

  // Each map's gradient, bit for bit the per-level loop's (through roi_align's own backward
  // and index_put's); a map no RoI reads gets a zero gradient.
  void backwardEqualsPerLevelRoIAlign() {
    for (const bool channels_last : {false, true}) {
      Pyramid p = randomPyramid(2, 4, 32, 48, at::kDouble, channels_last);
      const at::Tensor rois = randomRois(50, 2, 128, 192, at::kDouble);
      const at::Tensor levels = randomLevels(50, 3);  // map 3 is read by no RoI
      const at::Tensor grad_out = torch::randn({50, 4, 7, 7}, at::kDouble);

      Pyramid ours = p, ref = p;
      for (size_t l = 0; l < p.maps.size(); ++l) {
        ours.maps[l] = p.maps[l].detach().clone().requires_grad_(true);
        ref.maps[l] = p.maps[l].detach().clone().requires_grad_(true);
      }
      ops::multilevel_roi_align(ours.maps, rois, levels, p.scales, 7, 7, 2, false)
          .backward(grad_out);
      perLevelReference(ref, rois, levels, 7, 2, false).backward(grad_out);
      for (size_t l = 0; l < p.maps.size(); ++l) {
        const at::Tensor g = ours.maps[l].grad();
        QVERIFY2(g.defined(), qPrintable(QString("map %1 has no gradient").arg(l)));
        QVERIFY2(torch::equal(g, ref.maps[l].grad()),
                 qPrintable(QString("nhwc %1, map %2: max diff %3")
                                .arg(channels_last)
                                .arg(l)
                                .arg(maxAbsDiff(g, ref.maps[l].grad()))));
        QCOMPARE(g.suggest_memory_format(), p.maps[0].suggest_memory_format());
      }
      QCOMPARE(ours.maps[3].grad().abs().sum().item<double>(), 0.0);
    }
  }

  // bfloat16 maps are computed in float and rounded once; under autocast the maps run in
  // float and the result comes back in the maps' dtype.
  void reducedPrecisionAndAutocast() {
    const Pyramid p = randomPyramid(1, 3, 32, 32, at::kBFloat16, false);
    Pyramid in_float = p;
    for (at::Tensor& m : in_float.maps)
      m = m.to(at::kFloat);
    const at::Tensor rois = randomRois(20, 1, 128, 128, at::kFloat);
    const at::Tensor levels = randomLevels(20, 4);
    const at::Tensor want =
        ops::multilevel_roi_align(in_float.maps, rois, levels, p.scales, 7, 7, 2, false)
            .to(at::kBFloat16);
    QVERIFY(torch::equal(ops::multilevel_roi_align(p.maps, rois, levels, p.scales, 7, 7, 2, false),
                         want));
    at::autocast::set_autocast_enabled(at::kCPU, true);
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    const at::Tensor under =
        ops::multilevel_roi_align(p.maps, rois, levels, p.scales, 7, 7, 2, false);
    at::autocast::set_autocast_enabled(at::kCPU, false);
    at::autocast::clear_cache();
    QCOMPARE(under.scalar_type(), at::kBFloat16);
    QVERIFY(torch::equal(under, want));
  }

  // MultiScaleRoIAlign pools through the op: the same as the per-level loop on the levels it
  // maps the boxes to.
  void multiScaleRoIAlignUsesTheOp() {
    const Pyramid p = randomPyramid(2, 4, 56, 80, at::kFloat, true);
    // Sides from 4 to 600 pixels: every level of the pyramid (2..5) gets boxes.
    auto boxesOf = [](int64_t n) {
      const at::Tensor xy = torch::rand({n, 2}) * 200;
      return at::cat({xy, xy + 4 + torch::rand({n, 2}).pow(2) * 596}, 1);
    };
    const std::vector<at::Tensor> boxes = {boxesOf(40), boxesOf(25)};
    const mrcnn::model::MultiScaleRoIAlign pool;
    const at::Tensor got = pool(p.maps, boxes, {224, 320});
    const at::Tensor levels = pool.levels(boxes, 2, 5);
    for (int64_t l = 0; l < 4; ++l)
      QVERIFY2((levels == l).any().item<bool>(), qPrintable(QString("no box on map %1").arg(l)));
    at::Tensor rois = at::cat(
        {at::cat({at::zeros({40, 1}), boxes[0]}, 1), at::cat({at::ones({25, 1}), boxes[1]}, 1)});
    QVERIFY(torch::equal(got, perLevelReference(p, rois, levels, 7, 2, false)));
  }

  void badInputRefusedByName() {
    const Pyramid p = randomPyramid(2, 3, 16, 16, at::kFloat, false);
    const at::Tensor rois = randomRois(4, 2, 64, 64, at::kFloat);
    const at::Tensor levels = torch::tensor({0, 1, 2, 3}, at::kLong);
    auto expect = [](const std::string& message, const char* needle) {
      QVERIFY2(message.find(needle) != std::string::npos,
               qPrintable(QString::fromStdString("\"" + message + "\" lacks \"") + needle + "\""));
    };
    auto call = [&](const std::vector<at::Tensor>& maps, const at::Tensor& r, const at::Tensor& lv,
                    const std::vector<double>& scales) {
      return errorOf([&] { ops::multilevel_roi_align(maps, r, lv, scales, 7, 7, 2, false); });
    };
    expect(call(p.maps, rois, torch::tensor({0, 1, 4, 3}, at::kLong), p.scales),
           "multilevel_roi_align: levels[2] = 4 is outside [0, 4)");
    expect(call(p.maps, rois, levels.to(at::kInt), p.scales),
           "levels must be int64 [K] (K = 4), got Int");
    expect(call(p.maps, rois, levels, {0.25, 0.125}), "4 feature maps need as many scales, got 2");
    at::Tensor bad_batch = rois.clone();
    bad_batch[1][0] = 2;
    expect(call(p.maps, bad_batch, levels, p.scales), "rois[1] has batch index 2");
    std::vector<at::Tensor> other_channels = p.maps;
    other_channels[2] = torch::zeros({2, 4, 4, 4});
    expect(call(other_channels, rois, levels, p.scales),
           "features[2] [2, 4, 4, 4] must have the batch size and channels of features[0]");
    std::vector<at::Tensor> other_dtype = p.maps;
    other_dtype[1] = other_dtype[1].to(at::kDouble);
    expect(call(other_dtype, rois, levels, p.scales), "features[1] (Double, cpu) must have the");
    expect(call(std::vector<at::Tensor>(9, p.maps[0]), rois, levels, std::vector<double>(9, 0.25)),
           "takes 1 to 8 feature maps, got 9");
    // Differentiating the gradient is refused.
    std::vector<at::Tensor> leaves;
    for (const at::Tensor& m : p.maps)
      leaves.push_back(m.clone().requires_grad_(true));
    const at::Tensor out =
        ops::multilevel_roi_align(leaves, rois, levels, p.scales, 7, 7, 2, false);
    const at::Tensor w = torch::rand_like(out).requires_grad_(true);
    const auto grads = torch::autograd::grad({(out * w).sum()}, {leaves[0]}, {}, true, true);
    expect(errorOf([&] { grads[0].sum().backward(); }), "_multilevel_roi_align_backward");
  }

  void cudaKernelsMatchCpu() {
    SKIP_WITHOUT_GPU();
    for (const at::ScalarType dtype : {at::kFloat, at::kHalf}) {
      for (const bool channels_last : {false, true}) {
        const Pyramid p = randomPyramid(2, 16, 64, 96, dtype, channels_last);
        const at::Tensor rois = randomRois(300, 2, 256, 384, at::kFloat);
        const at::Tensor levels = randomLevels(300, 4);
        std::vector<at::Tensor> cpu_maps, gpu_maps;
        for (const at::Tensor& m : p.maps) {
          cpu_maps.push_back(m.to(at::kFloat).requires_grad_(true));
          gpu_maps.push_back(m.cuda().detach().requires_grad_(true));
        }
        const at::Tensor grad_out = torch::randn({300, 16, 7, 7});
        const at::Tensor cpu =
            ops::multilevel_roi_align(cpu_maps, rois, levels, p.scales, 7, 7, 2, false);
        const at::Tensor gpu = ops::multilevel_roi_align(gpu_maps, rois.cuda(), levels.cuda(),
                                                         p.scales, 7, 7, 2, false);
        QCOMPARE(gpu.scalar_type(), dtype);
        const double tol = dtype == at::kHalf ? 1e-2 : 1e-5;
        QVERIFY2(maxRelDiff(gpu, cpu) < tol, qPrintable(QString::number(maxRelDiff(gpu, cpu))));
        cpu.backward(grad_out);
        gpu.backward(grad_out.cuda().to(dtype));
        for (size_t l = 0; l < p.maps.size(); ++l) {
          const double d = maxRelDiff(gpu_maps[l].grad(), cpu_maps[l].grad());
          QVERIFY2(d < 10 * tol, qPrintable(QString("map %1: %2").arg(l).arg(d)));
        }
      }
    }
    // No host check on a GPU: a level outside the maps gives NaN for its RoI.
    const Pyramid p = randomPyramid(1, 4, 32, 32, at::kFloat, false);
    std::vector<at::Tensor> maps;
    for (const at::Tensor& m : p.maps)
      maps.push_back(m.cuda());
    const at::Tensor out = ops::multilevel_roi_align(
        maps, randomRois(3, 1, 128, 128, at::kFloat).cuda(),
        torch::tensor({0, 7, 2}, at::kLong).cuda(), p.scales, 7, 7, 2, false);
    QVERIFY(out[1].isnan().all().item<bool>());
    QVERIFY(!out[0].isnan().any().item<bool>());
  }

  // The point of the op: pooling a batch's boxes over the pyramid, forward and backward,
  // makes the host wait for the GPU nowhere.
  void noHostSyncOnGpu() {
    SKIP_WITHOUT_GPU();
    const Pyramid p = randomPyramid(2, 8, 64, 96, at::kFloat, true);
    std::vector<at::Tensor> maps;
    for (const at::Tensor& m : p.maps)
      maps.push_back(m.cuda().requires_grad_(true));
    const std::vector<at::Tensor> boxes = {randomBoxes(64, 300, at::kFloat).cuda(),
                                           randomBoxes(64, 300, at::kFloat).cuda()};
    const mrcnn::model::MultiScaleRoIAlign pool;
    pool(maps, boxes, {256, 384}).sum().backward();  // warm-up: allocations, kernel loads
    mrcnn::engine::SyncCounter counter(true);
    QVERIFY(counter.active());
    pool(maps, boxes, {256, 384}).sum().backward();
    const mrcnn::engine::SyncCount count = counter.stop();
    QVERIFY2(count.total == 0, count.json().c_str());
  }
};

QTEST_GUILESS_MAIN(TestMultilevelRoIAlign)
#include "test_multilevel_roi_align.moc"

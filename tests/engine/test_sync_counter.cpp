// The host-sync counter (engine/runtime/sync_counter.h): what it counts, how it groups by call
// stack, what it leaves alone, and on a CUDA device a real synchronising operation.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>
#include <string>
#include <vector>

#if defined(MRCNN_TORCH_HAS_CUDA)
#include <c10/cuda/CUDAFunctions.h>
#endif

#include "engine/model/sampler.h"
#include "engine/runtime/sync_counter.h"

namespace {

using mrcnn::engine::SyncCount;
using mrcnn::engine::SyncCounter;

// Keeps the warnings that reach it (the handler in place before a counter starts).
class Keeper : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override { messages.push_back(warning.msg()); }
  std::vector<std::string> messages;
};

#if defined(MRCNN_TORCH_HAS_CUDA)
// Two call sites of c10's sync hook, what every synchronising CUDA operation calls first
// (noipa: not inlined, and not folded into one function with the other).
[[gnu::noipa]] void syncSiteA() {
  c10::cuda::warn_or_error_on_sync();
  asm volatile("");  // not a tail call: this frame stays on the stack
}
[[gnu::noipa]] void syncSiteB() {
  c10::cuda::warn_or_error_on_sync();
  asm volatile("");
}
#endif

}  // namespace

class TestSyncCounter : public QObject {
  Q_OBJECT

 private slots:
  void offCountsNothing() {
    SyncCounter counter(false);
    QVERIFY(!counter.active());
    const SyncCount count = counter.stop();
    QCOMPARE(count.total, size_t{0});
    QVERIFY(count.sites.empty());
  }

  void countsEachSyncByCallStack() {
#if !defined(MRCNN_TORCH_HAS_CUDA)
    QSKIP("this LibTorch has no CUDA: there is no sync hook to count");
#else
    QVERIFY(SyncCounter::available());
    Keeper keeper;
    const c10::WarningUtils::WarningHandlerGuard guard(&keeper);
    SyncCount count;
    {
      SyncCounter counter(true);
      QVERIFY(counter.active());
      volatile int times = 2;  // not unrolled: one call stack, twice
      for (int i = 0; i < times; ++i) syncSiteA();
      syncSiteB();
      TORCH_WARN("another warning");  // not a sync: passed on to the handler before
      count = counter.stop();
    }
    QCOMPARE(count.total, size_t{3});
    QCOMPARE(count.sites.size(), size_t{2});
    QCOMPARE(count.sites[0].count, size_t{2});  // most frequent first
    QCOMPARE(count.sites[1].count, size_t{1});
    QVERIFY(count.sites[0].frames != count.sites[1].frames);
    for (const auto& site : count.sites) {
      QVERIFY(!site.frames.empty());
      // module+0xoffset: what scripts/symbolize_syncs.py hands to addr2line.
      // The hook first (the counter's own frame left out), then the code that called it.
      QVERIFY2(site.frames[0].find("libc10_cuda") == 0 &&
                   site.frames[0].find("+0x") != std::string::npos &&
                   site.frames[0].find("warn_or_error_on_sync") != std::string::npos,
               site.frames[0].c_str());
    }
    QCOMPARE(keeper.messages.size(), size_t{1});
    QCOMPARE(keeper.messages[0], std::string("another warning"));
    // Stopped: the debug mode is off again, so the hook warns no more.
    syncSiteA();
    QCOMPARE(keeper.messages.size(), size_t{1});
    QCOMPARE(static_cast<int>(c10::cuda::warning_state().get_sync_debug_mode()),
             static_cast<int>(c10::cuda::SyncDebugMode::L_DISABLED));

    const QJsonObject json = QJsonDocument::fromJson(QByteArray::fromStdString(count.json())).object();
    QCOMPARE(json["total"].toInt(), 3);
    QCOMPARE(json["sites"].toArray().size(), 2);
    QCOMPARE(json["sites"].toArray()[0].toObject()["count"].toInt(), 2);
    QVERIFY(!json["sites"].toArray()[1].toObject()["frames"].toArray().isEmpty());
#endif
  }

  void countsARealSyncOnAGpu() {
    if (!torch::cuda::is_available()) QSKIP("no CUDA device here: the GPU check runs this");
    const at::Tensor t = at::ones({1000}, at::TensorOptions().device(at::kCUDA));
    SyncCounter counter(true);
    const at::Tensor sum = t.sum();  // queued on the GPU: no wait
    const double value = sum.item<double>();  // the host waits for the result
    const SyncCount count = counter.stop();
    QCOMPARE(value, 1000.0);
    QCOMPARE(count.total, size_t{1});
  }

  // The samplers' draw on a GPU keeps the host out: no sync for a batch of images.
  void samplerDrawsWithoutASyncOnAGpu() {
    if (!torch::cuda::is_available()) QSKIP("no CUDA device here: the GPU check runs this");
    at::Tensor labels = at::zeros({5000}, at::TensorOptions().device(at::kCUDA));
    labels.narrow(0, 0, 40).fill_(1);
    mrcnn::model::BalancedPositiveNegativeSampler sampler(mrcnn::model::SamplerOptions{256, 0.25});
    SyncCounter counter(true);
    const auto drawn = sampler({labels, labels}, {1, 2});
    const SyncCount count = counter.stop();
    QCOMPARE(count.total, size_t{0});
    QCOMPARE(drawn[0].positive.sum().item<int64_t>(), 40);
    QCOMPARE(drawn[0].negative.sum().item<int64_t>(), 216);
  }
};

QTEST_GUILESS_MAIN(TestSyncCounter)
#include "test_sync_counter.moc"

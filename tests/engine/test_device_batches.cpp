// The training batches one ahead on their own thread (engine/train/device_batches.h), run on
// the CPU with `ahead` on: the same batches in the same order as the loader's own next()
// (images, sizes, targets, positions), the end answered and answered again, a worker's error
// rethrown at the batch it ended, and a stop while a batch is being prepared. Where a GPU is:
// the batches copied on the side stream equal the host's.
#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/torch.h>  // before Qt: its "slots" macro breaks LibTorch's headers

#include <QtTest>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "dataset/coco/coco.h"
#include "dataset/loader/loader.h"
#include "dataset/loader/sample_source.h"
#include "engine/setup/data_setup.h"
#include "engine/train/device_batches.h"

namespace fs = std::filesystem;
namespace dataset = mrcnn::dataset;
namespace train = mrcnn::train;

namespace {

// Reads like its base, but sample `bad` runs out of memory: an error the loader does not turn
// into a warning (an unreadable image would be one) but rethrows from next().
class FailingSource final : public dataset::SampleSource {
 public:
  FailingSource(std::shared_ptr<const dataset::SampleSource> base, size_t bad)
      : base_(std::move(base)), bad_(bad) {}
  size_t size() const override { return base_->size(); }
  int64_t imageId(size_t i) const override { return base_->imageId(i); }
  dataset::SourceSample read(size_t i) const override {
    if (i == bad_) throw std::bad_alloc();
    return base_->read(i);
  }
  dataset::Rle mask(const dataset::SourceAnnotation& a) const override { return base_->mask(a); }
  std::vector<int64_t> categoryIds() const override { return base_->categoryIds(); }

 private:
  std::shared_ptr<const dataset::SampleSource> base_;
  size_t bad_;
};

dataset::LoaderOptions evalOptions() {
  dataset::LoaderOptions o;
  o.training = false;
  o.batch_size = 2;
  o.image_height = 128;
  o.image_width = 192;
  o.eval_samples = 0;  // all six: three batches of two
  o.n_workers = 1;
  return o;
}

bool sameBatch(const train::DeviceBatch& got, const dataset::Batch& want, bool with_masks) {
  if (got.host.position != want.position || got.host.size() != want.size()) return false;
  if (!torch::equal(got.images.cpu(), mrcnn::engine::batchImages(want))) return false;
  const mrcnn::model::MaskRCNNTargets t = mrcnn::engine::batchTargets(want, with_masks);
  for (size_t i = 0; i < want.size(); ++i) {
    if (!torch::equal(got.targets.boxes[i].cpu(), t.boxes[i]) ||
        !torch::equal(got.targets.labels[i].cpu(), t.labels[i]))
      return false;
    if (with_masks && !torch::equal(got.targets.mask_crops[i].data.cpu(), t.mask_crops[i].data))
      return false;
  }
  return true;
}

}  // namespace

class TestDeviceBatches : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    const char* shared = std::getenv("MRCNN_SHARED_DIR");
    QVERIFY2(shared, "MRCNN_SHARED_DIR is not set (run through ctest)");
    const fs::path tiny = fs::path(shared) / "data" / "tinycoco";
    source_ = std::make_shared<dataset::CocoFolderSource>(
        tiny / "annotations" / "instances_val2017.json", tiny / "images" / "val2017");
  }

  // Ahead on a thread: every batch equal to the loader's own, in order, then the end (twice).
  void aheadGivesTheLoadersBatchesInOrder() {
    for (const bool ahead : {true, false}) {
      dataset::Loader reference(source_, evalOptions());
      dataset::Loader loader(source_, evalOptions());
      train::DeviceBatches batches(loader, c10::Device(c10::kCPU), /*with_masks=*/true, ahead);
      QCOMPARE(batches.ahead(), ahead);
      int count = 0;
      while (std::optional<dataset::Batch> want = reference.next()) {
        std::optional<train::DeviceBatch> got = batches.next();
        QVERIFY(got.has_value());
        QVERIFY2(sameBatch(*got, *want, true), std::to_string(count).c_str());
        ++count;
      }
      QCOMPARE(count, 3);
      QVERIFY(!batches.next().has_value());
      QVERIFY(!batches.next().has_value());
    }
  }

  // A worker's unexpected error comes out of next() at the batch it stopped, and again after.
  void anErrorIsRethrownInOrder() {
    const auto failing = std::make_shared<FailingSource>(source_, 4);
    dataset::Loader loader(failing, evalOptions());
    train::DeviceBatches batches(loader, c10::Device(c10::kCPU), true, /*ahead=*/true);
    QVERIFY(batches.next().has_value());
    QVERIFY(batches.next().has_value());
    for (int again = 0; again < 2; ++again) {
      try {
        (void)batches.next();
        QFAIL("no error at the third batch");
      } catch (const std::exception& e) {
        QVERIFY2(dynamic_cast<const std::bad_alloc*>(&e) != nullptr, e.what());
      }
    }
  }

  // Destroyed with a batch waiting in the slot and the loader mid-stream: it returns.
  void stopsWithABatchPrepared() {
    dataset::LoaderOptions o = evalOptions();
    o.training = true;  // an endless stream
    o.repeat = true;
    dataset::Loader loader(source_, o);
    {
      train::DeviceBatches batches(loader, c10::Device(c10::kCPU), false, true);
      QVERIFY(batches.next().has_value());
    }
    QVERIFY(loader.next().has_value());  // the loader goes on for whoever reads it next
  }

  // Where a GPU is: prepared on the side stream, the same as the host's batches.
  void sideStreamCopiesOnGpu() {
    if (!torch::cuda::is_available()) QSKIP("no GPU visible: this check runs where a GPU is");
    dataset::Loader reference(source_, evalOptions());
    dataset::Loader loader(source_, evalOptions());
    train::DeviceBatches batches(loader, c10::Device(c10::kCUDA, 0), true);
    QVERIFY(batches.ahead());
    while (std::optional<dataset::Batch> want = reference.next()) {
      std::optional<train::DeviceBatch> got = batches.next();
      QVERIFY(got.has_value() && got->images.is_cuda());
      QVERIFY(sameBatch(*got, *want, true));
    }
    QVERIFY(!batches.next().has_value());
  }

 private:
  std::shared_ptr<const dataset::SampleSource> source_;
};

QTEST_GUILESS_MAIN(TestDeviceBatches)
#include "test_device_batches.moc"

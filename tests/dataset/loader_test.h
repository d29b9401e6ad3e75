// What the loader tests share (test_loader.cpp: the stream's generator and the resize against
// torch and torchvision, through loader_oracle.py; test_loader_samples.cpp: the stream, the
// samples' boxes, flips and masks, bad images, shards): the fixture and its helpers.
#pragma once

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>

#include "dataset/coco/coco.h"
#include "dataset/convert/dataset_convert.h"
#include "dataset/loader/loader.h"
#include "dataset/loader/sample_order.h"
#include "dataset/loader/shard_source.h"
#include "dataset/mask/rle.h"
#include "dataset/shapes/shapes_generator.h"

namespace fs = std::filesystem;
using namespace mrcnn::dataset;

namespace loader_test {

inline fs::path envPath(const char* name) {
  const QByteArray value = qgetenv(name);
  return value.isEmpty() ? fs::path() : fs::path(value.toStdString());
}

template <typename T>
inline void writeRaw(const fs::path& path, const std::vector<T>& data) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(data.data()),
             static_cast<std::streamsize>(data.size() * sizeof(T)));
}

template <typename T>
inline std::vector<T> readRaw(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::vector<T> data(static_cast<size_t>(in.tellg()) / sizeof(T));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(data.data()),
          static_cast<std::streamsize>(data.size() * sizeof(T)));
  return data;
}

inline std::vector<Batch> take(Loader& loader, size_t count) {
  std::vector<Batch> batches;
  while (batches.size() < count) {
    std::optional<Batch> batch = loader.next();
    if (!batch) break;
    batches.push_back(std::move(*batch));
  }
  return batches;
}

inline std::vector<Batch> takeAll(Loader& loader) {
  return take(loader, std::numeric_limits<size_t>::max());
}

// Empty when equal, else what differs first.
inline QString difference(const Batch& a, const Batch& b) {
  if (a.epoch != b.epoch || a.position != b.position)
    return QString("stream place (%1, %2) vs (%3, %4)")
        .arg(a.epoch)
        .arg(a.position)
        .arg(b.epoch)
        .arg(b.position);
  if (a.size() != b.size() || a.height != b.height || a.width != b.width) return "batch shape";
  for (size_t i = 0; i < a.size(); ++i) {
    const ImageMeta& x = a.meta[i];
    const ImageMeta& y = b.meta[i];
    if (x.image_id != y.image_id || x.flipped != y.flipped || x.height != y.height ||
        x.width != y.width)
      return QString("image %1: id %2 vs %3 or flip/size").arg(i).arg(x.image_id).arg(y.image_id);
    const Targets& s = a.targets[i];
    const Targets& t = b.targets[i];
    if (s.boxes != t.boxes || s.labels != t.labels || s.iscrowd != t.iscrowd ||
        s.masks != t.masks || s.mask_windows != t.mask_windows ||
        s.annotation_ids != t.annotation_ids)
      return QString("image %1 (id %2): targets").arg(i).arg(x.image_id);
  }
  if (a.images != b.images) return "pixels";
  if (a.warnings.size() != b.warnings.size()) return "warnings";
  return {};
}

inline std::vector<int64_t> imageIds(const std::vector<Batch>& batches) {
  std::vector<int64_t> ids;
  for (const Batch& b : batches)
    for (const ImageMeta& m : b.meta)
      ids.push_back(m.image_id);
  return ids;
}

// The bounding box [x0, y0, x1, y1) of a 0/1 mask of h x w; all -1 when empty.
// An image's masks at its size, [N, height, width], from the loader's crops.
inline std::vector<uint8_t> wholeMasks(const Targets& t, int height, int width) {
  std::vector<uint8_t> out;
  out.reserve(t.size() * size_t(height) * size_t(width));
  for (size_t i = 0; i < t.size(); ++i) {
    const std::vector<uint8_t> one = t.fullMask(i, height, width);
    out.insert(out.end(), one.begin(), one.end());
  }
  return out;
}

inline std::array<int, 4> maskExtent(const uint8_t* mask, int h, int w) {
  std::array<int, 4> e{w, h, -1, -1};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      if (mask[static_cast<size_t>(y) * static_cast<size_t>(w) + static_cast<size_t>(x)]) {
        e = {std::min(e[0], x), std::min(e[1], y), std::max(e[2], x + 1), std::max(e[3], y + 1)};
      }
  if (e[2] < 0) return {-1, -1, -1, -1};
  return e;
}

// Images held in memory, with exactly known annotations: for the box, flip and padding checks.
class MemorySource final : public SampleSource {
 public:
  struct Item {
    int64_t id = 0;
    cv::Mat bgr;
    std::vector<SourceAnnotation> annotations;
  };
  std::vector<Item> items;

  size_t size() const override { return items.size(); }
  int64_t imageId(size_t index) const override { return items[index].id; }
  SourceSample read(size_t index) const override {
    const Item& item = items[index];
    SourceSample s;
    s.image_id = item.id;
    s.height = static_cast<uint32_t>(item.bgr.rows);
    s.width = static_cast<uint32_t>(item.bgr.cols);
    s.decoded = item.bgr;
    s.annotations = item.annotations;
    s.origin = "memory image " + std::to_string(item.id);
    return s;
  }
  std::vector<int64_t> categoryIds() const override { return {1, 2, 3}; }
};

// A textured image and one rectangle instance per box (x, y, w, h integer), label 1 + i % 3.
inline MemorySource::Item syntheticItem(int64_t id, int h, int w,
                                        const std::vector<std::array<int, 4>>& boxes) {
  MemorySource::Item item;
  item.id = id;
  item.bgr.create(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      item.bgr.at<cv::Vec3b>(y, x) =
          cv::Vec3b(static_cast<uint8_t>((x * 7 + y * 3) % 256),
                    static_cast<uint8_t>((x * x + y) % 256), static_cast<uint8_t>((y * 11) % 256));
  for (size_t i = 0; i < boxes.size(); ++i) {
    const auto& b = boxes[i];
    cv::Mat mask = cv::Mat::zeros(h, w, CV_8UC1);
    mask(cv::Rect(b[0], b[1], b[2], b[3])).setTo(1);
    SourceAnnotation a;
    a.id = id * 100 + static_cast<int64_t>(i);
    a.category_id = 1 + static_cast<int64_t>(i % 3);
    a.label = static_cast<uint32_t>(a.category_id);
    a.bbox = {double(b[0]), double(b[1]), double(b[2]), double(b[3])};
    a.area = double(b[2]) * b[3];
    a.mask = encodeMask(mask);
    item.annotations.push_back(std::move(a));
  }
  return item;
}

inline LoaderOptions smallOptions() {
  LoaderOptions o;
  o.batch_size = 4;
  o.seed = 2026;
  o.resize_mode = ResizeMode::kShorterSide;
  o.min_size = 256;
  o.max_size = 400;
  o.n_workers = 2;
  o.prefetch_buffer_size = 2;
  return o;
}

}  // namespace loader_test

using namespace loader_test;  // NOLINT: the tests' own helpers

class TestLoader : public QObject {
  Q_OBJECT

 private:
  fs::path tinycoco_;
  std::shared_ptr<const CocoDataset> train_, val_;
  std::shared_ptr<const SampleSource> train_source_, val_source_, shapes_source_;
  QTemporaryDir temp_;
  fs::path work_;  // the oracle's folder
  QJsonObject oracle_;
  // What was sent to the oracle.
  std::vector<std::array<int, 2>> oracle_sizes_;
  std::vector<std::vector<std::array<int, 2>>> oracle_batches_;
  cv::Mat oracle_rgb_;  // val image 0, decoded
  ResizedSize oracle_fixed_;
  std::vector<int64_t> oracle_mask_ids_;
  struct OrderRequest {
    uint64_t seed, epoch;
    uint32_t count, buffer;
  };
  std::vector<OrderRequest> oracle_orders_;

  void runOracle();

 private slots:
  void initTestCase();
  void prngMatchesItsDescription();
  void resizedSizesFollowTheFormulas();
  void shorterSideMatchesTorchvision();
  void pixelsMatchTorchInterpolate();
  void masksMatchTorchBilinearThreshold();
  void sameSeedSameStreamAcrossRunsAndThreads_data();
  void sameSeedSameStreamAcrossRunsAndThreads();
  void epochsAndSeedsChangeTheOrder();
  void resumeContinuesTheStream();
  void boxesScaleAndFlipWithTheImage();
  void flippedRealSamplesMirror();
  void masksAlignWithBoxes();
  void crowdSkippedOnlyWhenAsked();
  void maxNumInstancesKeepsTheFirst();
  void labelsAreContiguous();
  void paddingToTheMultiple();
  void badImagesSkippedAndCounted();
  void everyImageBadEndsWithAnError();
  void evalOrderIsFileOrder();
  void earlyStopAndWaitTime();
  void shardsGiveTheSameSamples();
  void repeatFactorsFollowTheRule();  // test_loader_repeats.cpp
  void repeatsResumeExactly();
  void emptyImagesAreNegativesOrLeftOut();
};

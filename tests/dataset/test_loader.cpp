// The data loader: a deterministic stream (same seed, same batches, whatever the thread
// count; epochs differ; a resumed run continues exactly), the resize of both modes against
// the formulas and against torchvision (sizes, batch padding, pixel values, masks), boxes,
// flips and masks consistent with each other, crowd skipping, the instance cap, contiguous
// labels, bad images skipped and counted, and evaluation order. Expected values from torch
// and torchvision come from loader_oracle.py, run once with MRCNN_PYTHON.
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
#include "dataset/rle.h"
#include "dataset/shapes_generator.h"

namespace fs = std::filesystem;
using namespace mrcnn::dataset;

namespace {

fs::path envPath(const char* name) {
  const QByteArray value = qgetenv(name);
  return value.isEmpty() ? fs::path() : fs::path(value.toStdString());
}

template <typename T>
void writeRaw(const fs::path& path, const std::vector<T>& data) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(data.data()),
             static_cast<std::streamsize>(data.size() * sizeof(T)));
}

template <typename T>
std::vector<T> readRaw(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::vector<T> data(static_cast<size_t>(in.tellg()) / sizeof(T));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(data.data()),
          static_cast<std::streamsize>(data.size() * sizeof(T)));
  return data;
}

std::vector<Batch> take(Loader& loader, size_t count) {
  std::vector<Batch> batches;
  while (batches.size() < count) {
    std::optional<Batch> batch = loader.next();
    if (!batch) break;
    batches.push_back(std::move(*batch));
  }
  return batches;
}

std::vector<Batch> takeAll(Loader& loader) {
  return take(loader, std::numeric_limits<size_t>::max());
}

// Empty when equal, else what differs first.
QString difference(const Batch& a, const Batch& b) {
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
        s.masks != t.masks || s.annotation_ids != t.annotation_ids)
      return QString("image %1 (id %2): targets").arg(i).arg(x.image_id);
  }
  if (a.images != b.images) return "pixels";
  if (a.warnings.size() != b.warnings.size()) return "warnings";
  return {};
}

std::vector<int64_t> imageIds(const std::vector<Batch>& batches) {
  std::vector<int64_t> ids;
  for (const Batch& b : batches)
    for (const ImageMeta& m : b.meta)
      ids.push_back(m.image_id);
  return ids;
}

// The bounding box [x0, y0, x1, y1) of a 0/1 mask of h x w; all -1 when empty.
std::array<int, 4> maskExtent(const uint8_t* mask, int h, int w) {
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
MemorySource::Item syntheticItem(int64_t id, int h, int w,
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

LoaderOptions smallOptions() {
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

}  // namespace

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
};

void TestLoader::initTestCase() {
  QVERIFY(temp_.isValid());
  const fs::path shared = envPath("MRCNN_SHARED_DIR");
  QVERIFY2(!shared.empty(), "MRCNN_SHARED_DIR is not set (run through ctest)");
  tinycoco_ = shared / "data" / "tinycoco";
  QVERIFY2(fs::exists(tinycoco_), tinycoco_.c_str());
  train_ = std::make_shared<const CocoDataset>(
      loadCoco(tinycoco_ / "annotations" / "instances_train2017.json"));
  val_ = std::make_shared<const CocoDataset>(
      loadCoco(tinycoco_ / "annotations" / "instances_val2017.json"));
  train_source_ = std::make_shared<CocoFolderSource>(train_, tinycoco_ / "images" / "train2017");
  val_source_ = std::make_shared<CocoFolderSource>(val_, tinycoco_ / "images" / "val2017");

  ShapesOptions shapes;
  shapes.root = fs::path(temp_.path().toStdString()) / "shapes";
  shapes.train_images = 16;
  shapes.val_images = 4;
  shapes.min_side = 96;
  shapes.max_side = 160;
  shapes.seed = 11;
  generateShapes(shapes);
  shapes_source_ = std::make_shared<CocoFolderSource>(shapesAnnotationFile(shapes.root, "train"),
                                                      shapesImageDir(shapes.root, "train"));
  work_ = fs::path(temp_.path().toStdString()) / "oracle";
  fs::create_directories(work_);
  runOracle();
}

void TestLoader::runOracle() {
  QJsonObject request;
  // Every tinycoco size, then random sizes (a fixed LCG) of aspect ratio up to 4.
  for (const auto* dataset : {train_.get(), val_.get()})
    for (const CocoImage& image : dataset->images())
      oracle_sizes_.push_back({int(image.height), int(image.width)});
  uint32_t lcg = 12345;
  auto random = [&](int lo, int hi) {
    lcg = lcg * 1664525u + 1013904223u;
    return lo + static_cast<int>((lcg >> 8) % static_cast<uint32_t>(hi - lo + 1));
  };
  while (oracle_sizes_.size() < 100) {
    const int h = random(16, 2000);
    const int w = random(std::max(16, h / 4), std::min(2000, h * 4));
    oracle_sizes_.push_back({h, w});
  }
  QJsonArray sizes;
  for (const auto& s : oracle_sizes_)
    sizes.append(QJsonArray{s[0], s[1]});
  request["sizes"] = sizes;
  request["min_size"] = 800;
  request["max_size"] = 1333;
  oracle_batches_ = {{{427, 640}, {480, 640}}, {{640, 427}, {333, 500}, {500, 333}}, {{231, 1000}}};
  QJsonArray batches;
  for (const auto& batch : oracle_batches_) {
    QJsonArray b;
    for (const auto& s : batch)
      b.append(QJsonArray{s[0], s[1]});
    batches.append(b);
  }
  request["batches"] = batches;

  // Val image 0 as the loader decodes it, and its masks at the image's size.
  const auto val_source = std::static_pointer_cast<const CocoFolderSource>(val_source_);
  cv::Mat bgr = cv::imread(val_source->imagePath(0).string(),
                           cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  QVERIFY(!bgr.empty());
  cv::cvtColor(bgr, oracle_rgb_, cv::COLOR_BGR2RGB);
  writeRaw(work_ / "image.rgb",
           std::vector<uint8_t>(oracle_rgb_.data, oracle_rgb_.data + oracle_rgb_.total() * 3));
  request["image"] =
      QJsonObject{{"file", "image.rgb"}, {"height", oracle_rgb_.rows}, {"width", oracle_rgb_.cols}};
  oracle_fixed_ = resizedSize(oracle_rgb_.rows, oracle_rgb_.cols, {.mode = ResizeMode::kFixed});
  request["fixed"] = QJsonObject{{"height", oracle_fixed_.height}, {"width", oracle_fixed_.width}};
  const ResizedSize shorter =
      resizedSize(oracle_rgb_.rows, oracle_rgb_.cols, {.mode = ResizeMode::kShorterSide});
  std::vector<uint8_t> masks;
  for (const uint32_t a : val_->annotationsOfImage(0)) {
    const CocoAnnotation& annotation = val_->annotations()[a];
    const cv::Mat mask = decodeMask(annotationRle(*val_, annotation));
    QCOMPARE(mask.rows, oracle_rgb_.rows);
    masks.insert(masks.end(), mask.data, mask.data + mask.total());
    oracle_mask_ids_.push_back(annotation.id);
  }
  writeRaw(work_ / "masks.u8", masks);
  request["masks"] =
      QJsonObject{{"file", "masks.u8"},           {"count", int(oracle_mask_ids_.size())},
                  {"height", oracle_rgb_.rows},   {"width", oracle_rgb_.cols},
                  {"out_height", shorter.height}, {"out_width", shorter.width}};

  oracle_orders_ = {
      {0, 0, 10, 0},       {2026, 0, 32, 0}, {2026, 1, 32, 0}, {2026, 7, 1000, 0},
      {2026, 3, 1000, 64}, {1, 0, 100, 1},   {1, 0, 100, 99},  {uint64_t(1) << 40, 5, 17, 0},
      {9, 2, 1, 0}};
  QJsonArray orders;
  for (const auto& o : oracle_orders_)
    orders.append(QJsonObject{{"seed", double(o.seed)},
                              {"epoch", double(o.epoch)},
                              {"count", double(o.count)},
                              {"buffer", double(o.buffer)}});
  request["orders"] = orders;
  request["flips"] = QJsonObject{{"seed", 2026}, {"epoch", 3}, {"count", 256}};
  {
    QFile file(QString::fromStdString((work_ / "request.json").string()));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QJsonDocument(request).toJson());
  }

  const fs::path python = envPath("MRCNN_PYTHON");
  const fs::path script = envPath("MRCNN_SOURCE_DIR") / "tests" / "dataset" / "loader_oracle.py";
  QVERIFY2(!python.empty() && fs::exists(python), "MRCNN_PYTHON is not set or missing");
  QProcess process;
  process.start(QString::fromStdString(python.string()),
                {QString::fromStdString(script.string()), QString::fromStdString(work_.string())});
  QVERIFY2(process.waitForFinished(300000), "the oracle script did not finish");
  const QByteArray err = process.readAllStandardError();
  QVERIFY2(process.exitStatus() == QProcess::NormalExit && process.exitCode() == 0,
           err.constData());
  QFile file(QString::fromStdString((work_ / "response.json").string()));
  QVERIFY(file.open(QIODevice::ReadOnly));
  oracle_ = QJsonDocument::fromJson(file.readAll()).object();
  QVERIFY(oracle_.contains("sizes") && oracle_.contains("shorter") && oracle_.contains("orders"));
}

void TestLoader::prngMatchesItsDescription() {
  // SplitMix64's first output from state 0 (its reference value).
  QCOMPARE(mix64(0x9E3779B97F4A7C15ull), 0xE220A8397B1DCDAFull);
  // Orders and flips as the Python rendering of the documented algorithms gives them: the
  // stream is the same with any standard library, compiler or platform.
  const QJsonArray orders = oracle_["orders"].toArray();
  QCOMPARE(orders.size(), qsizetype(oracle_orders_.size()));
  for (size_t i = 0; i < oracle_orders_.size(); ++i) {
    const OrderRequest& r = oracle_orders_[i];
    const std::vector<uint32_t> order = trainingOrder(r.seed, r.epoch, r.count, r.buffer);
    const QJsonArray expected = orders[qsizetype(i)].toArray();
    QCOMPARE(order.size(), size_t(expected.size()));
    for (size_t k = 0; k < order.size(); ++k)
      QVERIFY2(order[k] == uint32_t(expected[qsizetype(k)].toInt()),
               qPrintable(QString("order %1 at %2").arg(i).arg(k)));
    std::vector<uint32_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (uint32_t k = 0; k < r.count; ++k)
      QCOMPARE(sorted[k], k);  // a permutation
  }
  const QJsonArray flips = oracle_["flips"].toArray();
  int flipped = 0;
  for (int i = 0; i < 256; ++i) {
    QCOMPARE(flipDecision(2026, 3, uint32_t(i)), flips[i].toBool());
    flipped += flipDecision(2026, 3, uint32_t(i)) ? 1 : 0;
  }
  QVERIFY2(flipped > 96 && flipped < 160, qPrintable(QString::number(flipped)));  // a fair coin
  // A window of 1 keeps file order; a window smaller than the dataset moves samples at most
  // (window - 1) places earlier.
  const auto window1 = trainingOrder(5, 0, 50, 1);
  for (uint32_t k = 0; k < 50; ++k)
    QCOMPARE(window1[k], k);
  const auto window8 = trainingOrder(5, 0, 500, 8);
  for (uint32_t k = 0; k < 500; ++k)
    QVERIFY(window8[k] < k + 8);
}

void TestLoader::resizedSizesFollowTheFormulas() {
  // fixed: the limiting side is the canvas side, the other floor(side * scale), exactly.
  for (const auto& [h, w] : oracle_sizes_) {
    for (const auto& [ch, cw] :
         std::vector<std::pair<int, int>>{{832, 1344}, {512, 512}, {384, 640}}) {
      const ResizedSize r =
          resizedSize(h, w, {.mode = ResizeMode::kFixed, .canvas_height = ch, .canvas_width = cw});
      QVERIFY(r.height <= ch && r.width <= cw);
      const bool height_limits = int64_t(ch) * w <= int64_t(cw) * h;
      if (height_limits) {
        QCOMPARE(r.height, ch);
        QCOMPARE(int64_t(r.width), std::max<int64_t>(1, int64_t(w) * ch / h));
        QCOMPARE(r.scale, double(ch) / h);
      } else {
        QCOMPARE(r.width, cw);
        QCOMPARE(int64_t(r.height), std::max<int64_t>(1, int64_t(h) * cw / w));
        QCOMPARE(r.scale, double(cw) / w);
      }
      // Aspect ratio kept: both sides within a pixel of side * scale.
      QVERIFY(std::abs(r.width - w * r.scale) < 1 && std::abs(r.height - h * r.scale) < 1);
    }
    // shorter_side: the shorter side is min_size unless the longer would pass max_size.
    const ResizedSize s = resizedSize(h, w, {.mode = ResizeMode::kShorterSide});
    const double scale = std::min(800.0 / std::min(h, w), 1333.0 / std::max(h, w));
    QCOMPARE(s.scale, scale);
    QCOMPARE(s.height, int(std::floor(h * scale)));
    QCOMPARE(s.width, int(std::floor(w * scale)));
    QVERIFY(std::max(s.height, s.width) <= 1333 && std::min(s.height, s.width) <= 800);
    QVERIFY(std::max(s.height, s.width) >= 1332 || std::min(s.height, s.width) >= 799);
  }
  // TAO's canvas (832, 1344) on COCO's most common size: 640x480 -> 832 x 1109.
  const ResizedSize coco = resizedSize(480, 640, {});
  QCOMPARE(coco.height, 832);
  QCOMPARE(coco.width, 1109);
}

void TestLoader::shorterSideMatchesTorchvision() {
  const QJsonArray sizes = oracle_["sizes"].toArray();
  QCOMPARE(sizes.size(), qsizetype(oracle_sizes_.size()));
  int off_by_floor = 0;  // sizes where floor(side * scale) is below min_size: still equal
  for (size_t i = 0; i < oracle_sizes_.size(); ++i) {
    const auto [h, w] = oracle_sizes_[i];
    const ResizedSize s = resizedSize(h, w, {.mode = ResizeMode::kShorterSide});
    const QJsonArray expected = sizes[qsizetype(i)].toArray();
    QVERIFY2(s.height == expected[0].toInt() && s.width == expected[1].toInt(),
             qPrintable(QString("%1x%2: ours %3x%4, torchvision %5x%6")
                            .arg(h)
                            .arg(w)
                            .arg(s.height)
                            .arg(s.width)
                            .arg(expected[0].toInt())
                            .arg(expected[1].toInt())));
    if (std::min(s.height, s.width) == 799) ++off_by_floor;
  }
  qInfo("%zu sizes equal to torchvision's; %d of them with a 799-pixel shorter side",
        oracle_sizes_.size(), off_by_floor);
  // Batch shapes: images of these sizes through the loader, padded to 32 over the batch.
  const QJsonArray shapes = oracle_["batch_shapes"].toArray();
  for (size_t b = 0; b < oracle_batches_.size(); ++b) {
    auto source = std::make_shared<MemorySource>();
    for (size_t i = 0; i < oracle_batches_[b].size(); ++i)
      source->items.push_back(
          syntheticItem(int64_t(i + 1), oracle_batches_[b][i][0], oracle_batches_[b][i][1], {}));
    LoaderOptions o;
    o.training = false;
    o.resize_mode = ResizeMode::kShorterSide;
    o.batch_size = uint32_t(source->items.size());
    o.n_workers = 1;
    Loader loader(source, o);
    std::optional<Batch> batch = loader.next();
    QVERIFY(batch);
    const QJsonArray shape = shapes[qsizetype(b)].toArray();
    QCOMPARE(int(batch->size()), shape[0].toInt());
    QCOMPARE(batch->height, shape[2].toInt());
    QCOMPARE(batch->width, shape[3].toInt());
  }
}

void TestLoader::pixelsMatchTorchInterpolate() {
  // Tolerance 4e-6 on values in about [-2.2, 2.7], 16 units in the last place near 2.6:
  // both sides normalise the same decoded bytes with the same float32 operations and
  // interpolate with bit-identical taps and weights (torch's source coordinate is one fused
  // multiply-add, so is ours); what remains is the rounding of the weighted sum, which torch's
  // vectorised kernel may fuse or order differently: 3 ulps measured, margin for other CPUs.
  // (Computing the coordinate without the fused rounding gave 6.8e-5, which this catches.)
  constexpr float kTolerance = 4e-6f;
  LoaderOptions o;
  o.training = false;
  o.batch_size = 1;
  o.eval_samples = 1;
  o.n_workers = 1;
  for (const ResizeMode mode : {ResizeMode::kShorterSide, ResizeMode::kFixed}) {
    o.resize_mode = mode;
    Loader loader(val_source_, o);
    std::optional<Batch> batch = loader.next();
    QVERIFY(batch && batch->size() == 1);
    const QJsonObject expected =
        oracle_[mode == ResizeMode::kShorterSide ? "shorter" : "fixed"].toObject();
    const std::vector<float> reference =
        readRaw<float>(work_ / expected["file"].toString().toStdString());
    const QJsonArray shape = expected["shape"].toArray();
    const int eh = shape[1].toInt();
    const int ew = shape[2].toInt();
    const ImageMeta& meta = batch->meta[0];
    if (mode == ResizeMode::kShorterSide) {
      // The whole padded tensor, padding included: GeneralizedRCNNTransform's batch of one.
      QCOMPARE(batch->height, eh);
      QCOMPARE(batch->width, ew);
      const QJsonArray size = expected["size"].toArray();
      QCOMPARE(meta.height, size[0].toInt());
      QCOMPARE(meta.width, size[1].toInt());
    } else {
      QCOMPARE(meta.height, eh);
      QCOMPARE(meta.width, ew);
      QCOMPARE(batch->height, 832);  // 832 and 1344 are multiples of 64 already
      QCOMPARE(batch->width, 1344);
    }
    QCOMPARE(reference.size(), size_t(3) * size_t(eh) * size_t(ew));
    double worst = 0;
    size_t padding_nonzero = 0;
    const auto bh = size_t(batch->height), bw = size_t(batch->width);
    for (size_t c = 0; c < 3; ++c)
      for (size_t y = 0; y < bh; ++y)
        for (size_t x = 0; x < bw; ++x) {
          const float ours = batch->images[(c * bh + y) * bw + x];
          if (y < size_t(eh) && x < size_t(ew)) {
            worst = std::max(
                worst, double(std::abs(ours - reference[(c * size_t(eh) + y) * size_t(ew) + x])));
          } else if (ours != 0.0f) {
            ++padding_nonzero;
          }
        }
    qInfo("%s: %dx%d from %dx%d, max |ours - torch| = %.3g",
          mode == ResizeMode::kFixed ? "fixed" : "shorter_side", meta.height, meta.width,
          meta.original_height, meta.original_width, worst);
    QVERIFY2(worst <= kTolerance, qPrintable(QString::number(worst)));
    QCOMPARE(padding_nonzero, size_t(0));
  }
}

void TestLoader::masksMatchTorchBilinearThreshold() {
  LoaderOptions o;
  o.training = false;
  o.batch_size = 1;
  o.eval_samples = 1;
  o.n_workers = 1;
  o.resize_mode = ResizeMode::kShorterSide;
  Loader loader(val_source_, o);
  std::optional<Batch> batch = loader.next();
  QVERIFY(batch);
  const Targets& t = batch->targets[0];
  const int h = batch->meta[0].height;
  const int w = batch->meta[0].width;
  const std::vector<uint8_t> reference = readRaw<uint8_t>(work_ / "masks.out.u8");
  const size_t plane = size_t(h) * size_t(w);
  QCOMPARE(reference.size(), oracle_mask_ids_.size() * plane);
  QVERIFY(t.size() > 0);
  size_t differing = 0, compared = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const auto at =
        std::find(oracle_mask_ids_.begin(), oracle_mask_ids_.end(), t.annotation_ids[i]);
    QVERIFY(at != oracle_mask_ids_.end());
    const size_t r = size_t(at - oracle_mask_ids_.begin());
    for (size_t p = 0; p < plane; ++p)
      differing += t.masks[i * plane + p] != reference[r * plane + p];
    compared += plane;
  }
  // Only pixels whose interpolated value is within rounding of 0.5 may differ.
  qInfo("%zu masks, %zu of %zu pixels differ from torch's bilinear >= 0.5", t.size(), differing,
        compared);
  QVERIFY2(differing * 100000 <= compared, qPrintable(QString::number(differing)));
}

void TestLoader::sameSeedSameStreamAcrossRunsAndThreads_data() {
  QTest::addColumn<QString>("dataset");
  QTest::addColumn<int>("mode");
  QTest::newRow("tinycoco shorter_side") << "tinycoco" << int(ResizeMode::kShorterSide);
  QTest::newRow("tinycoco fixed") << "tinycoco" << int(ResizeMode::kFixed);
  QTest::newRow("shapes shorter_side") << "shapes" << int(ResizeMode::kShorterSide);
}

void TestLoader::sameSeedSameStreamAcrossRunsAndThreads() {
  QFETCH(QString, dataset);
  QFETCH(int, mode);
  const auto source = dataset == "tinycoco" ? train_source_ : shapes_source_;
  LoaderOptions o = smallOptions();
  o.resize_mode = ResizeMode(mode);
  o.image_height = 320;
  o.image_width = 448;
  // Across two epochs and a half.
  const size_t count = source->size() / o.batch_size * 5 / 2;
  o.n_workers = 2;
  Loader a(source, o);
  Loader b(source, o);
  o.n_workers = 1;
  Loader c(source, o);
  o.n_workers = 0;
  Loader d(source, o);
  const std::vector<Batch> ba = take(a, count), bb = take(b, count), bc = take(c, count),
                           bd = take(d, count);
  QCOMPARE(ba.size(), count);
  QCOMPARE(bb.size(), count);
  QCOMPARE(bc.size(), count);
  QCOMPARE(bd.size(), count);
  int flipped = 0;
  for (size_t i = 0; i < count; ++i) {
    QVERIFY2(
        difference(ba[i], bb[i]).isEmpty(),
        qPrintable(QString("batch %1, 2 vs 2 workers: %2").arg(i).arg(difference(ba[i], bb[i]))));
    QVERIFY2(
        difference(ba[i], bc[i]).isEmpty(),
        qPrintable(QString("batch %1, 2 vs 1 workers: %2").arg(i).arg(difference(ba[i], bc[i]))));
    QVERIFY2(
        difference(ba[i], bd[i]).isEmpty(),
        qPrintable(QString("batch %1, 2 vs 0 workers: %2").arg(i).arg(difference(ba[i], bd[i]))));
    for (const ImageMeta& m : ba[i].meta)
      flipped += m.flipped;
  }
  QVERIFY(flipped > 0 && flipped < int(count * o.batch_size));
  QCOMPARE(ba.back().epoch, uint64_t(2));
}

void TestLoader::epochsAndSeedsChangeTheOrder() {
  LoaderOptions o = smallOptions();
  o.load_masks = false;
  const size_t per_epoch = train_source_->size() / o.batch_size;  // 32 / 4: nothing dropped
  Loader loader(train_source_, o);
  const std::vector<Batch> batches = take(loader, 2 * per_epoch);
  std::vector<int64_t> ids = imageIds(batches);
  const std::vector<int64_t> first(ids.begin(), ids.begin() + ptrdiff_t(ids.size() / 2));
  const std::vector<int64_t> second(ids.begin() + ptrdiff_t(ids.size() / 2), ids.end());
  QVERIFY(first != second);
  for (auto epoch : {first, second}) {  // each epoch visits every image once
    std::sort(epoch.begin(), epoch.end());
    std::vector<int64_t> all;
    for (const CocoImage& image : train_->images())
      all.push_back(image.id);
    std::sort(all.begin(), all.end());
    QCOMPARE(epoch, all);
  }
  QCOMPARE(batches[per_epoch - 1].epoch, uint64_t(0));
  QCOMPARE(batches[per_epoch - 1].position, uint64_t(32));
  QCOMPARE(batches[per_epoch].epoch, uint64_t(1));
  o.seed = 2027;
  Loader other(train_source_, o);
  QVERIFY(imageIds(take(other, per_epoch)) != first);
}

void TestLoader::resumeContinuesTheStream() {
  // A run stopped after 5 batches (with a skipped image on the way) and resumed from its
  // (epoch, position) sees exactly the batches the uninterrupted run saw, across an epoch
  // boundary; reset() to the same place does the same.
  const fs::path folder = fs::path(temp_.path().toStdString()) / "resume";
  fs::create_directories(folder);
  for (const CocoImage& image : train_->images())
    fs::copy_file(tinycoco_ / "images" / "train2017" / std::string(image.file_name),
                  folder / std::string(image.file_name), fs::copy_options::overwrite_existing);
  fs::remove(folder / std::string(train_->images()[5].file_name));
  auto source = std::make_shared<CocoFolderSource>(train_, folder);
  LoaderOptions o = smallOptions();
  o.batch_size = 3;  // 31 readable images: a short last batch, dropped
  Loader full(source, o);
  const std::vector<Batch> all = take(full, 16);
  QCOMPARE(all.size(), size_t(16));
  QCOMPARE(all[9].epoch, uint64_t(0));
  QCOMPARE(all[10].epoch, uint64_t(1));  // 31 / 3 = 10 full batches in epoch 0
  for (const size_t stop : {size_t(5), size_t(10), size_t(12)}) {
    Loader run(source, o);
    const std::vector<Batch> before = take(run, stop);
    const uint64_t epoch = run.epoch(), position = run.position();
    QCOMPARE(epoch, before.back().epoch);
    QCOMPARE(position, before.back().position);
    Loader resumed(source, o, epoch, position);
    const std::vector<Batch> after = take(resumed, 16 - stop);
    for (size_t i = 0; i < after.size(); ++i)
      QVERIFY2(difference(after[i], all[stop + i]).isEmpty(),
               qPrintable(QString("stop %1, batch %2: %3")
                              .arg(stop)
                              .arg(i)
                              .arg(difference(after[i], all[stop + i]))));
    run.reset(epoch, position);
    const std::optional<Batch> again = run.next();
    QVERIFY(again && difference(*again, all[stop]).isEmpty());
  }
}

void TestLoader::boxesScaleAndFlipWithTheImage() {
  auto source = std::make_shared<MemorySource>();
  source->items.push_back(
      syntheticItem(1, 100, 200, {{10, 20, 30, 40}, {150, 0, 50, 100}, {0, 90, 3, 10}}));
  LoaderOptions o;
  o.batch_size = 1;
  o.resize_mode = ResizeMode::kFixed;
  o.image_height = 150;  // scale 1.5: 150 x 300
  o.image_width = 320;
  o.max_level = 5;
  o.n_workers = 1;
  o.drop_last = false;
  // The flip of image 0 in each epoch is known in advance.
  uint64_t plain_epoch = 0, flip_epoch = 0;
  while (flipDecision(o.seed, plain_epoch, 0))
    ++plain_epoch;
  while (!flipDecision(o.seed, flip_epoch, 0))
    ++flip_epoch;
  Loader plain_loader(source, o, plain_epoch);
  Loader flip_loader(source, o, flip_epoch);
  const Batch plain = *plain_loader.next();
  const Batch flipped = *flip_loader.next();
  QVERIFY(!plain.meta[0].flipped && flipped.meta[0].flipped);
  QCOMPARE(plain.meta[0].height, 150);
  QCOMPARE(plain.meta[0].width, 300);
  QCOMPARE(plain.height, 160);  // padded to 2^5
  QCOMPARE(plain.width, 320);
  const Targets& p = plain.targets[0];
  const Targets& f = flipped.targets[0];
  QCOMPARE(p.size(), size_t(3));
  const std::vector<float> expected{15, 30, 60, 90, 225, 0, 300, 150, 0, 135, 4.5f, 150};
  QCOMPARE(p.boxes, expected);
  const std::vector<int64_t> labels{1, 2, 3};
  QCOMPARE(p.labels, labels);
  for (size_t i = 0; i < 3; ++i) {
    QCOMPARE(f.boxes[4 * i + 0], 300 - p.boxes[4 * i + 2]);
    QCOMPARE(f.boxes[4 * i + 1], p.boxes[4 * i + 1]);
    QCOMPARE(f.boxes[4 * i + 2], 300 - p.boxes[4 * i + 0]);
    QCOMPARE(f.boxes[4 * i + 3], p.boxes[4 * i + 3]);
  }
  // Masks, and the image, mirror exactly; a rectangle scaled by 1.5 covers its scaled box.
  const int h = 150, w = 300;
  for (size_t i = 0; i < 3; ++i) {
    const uint8_t* pm = p.masks.data() + i * size_t(h * w);
    const uint8_t* fm = f.masks.data() + i * size_t(h * w);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        QCOMPARE(fm[y * w + x], pm[y * w + (w - 1 - x)]);
    const auto e = maskExtent(pm, h, w);
    for (int k = 0; k < 4; ++k)
      QVERIFY(std::abs(e[size_t(k)] - p.boxes[4 * i + size_t(k)]) <= 1.0f);
  }
  for (size_t c = 0; c < 3; ++c)
    for (int y = 0; y < 160; ++y)
      for (int x = 0; x < 320; ++x) {
        const float pv = plain.images[(c * 160 + size_t(y)) * 320 + size_t(x)];
        const float fv =
            flipped.images[(c * 160 + size_t(y)) * 320 + size_t(x < w ? w - 1 - x : x)];
        if (x < w && y < h) {
          QCOMPARE(fv, pv);
        } else {
          QCOMPARE(pv, 0.0f);
        }
      }
  // A 3-pixel-wide box survives (4.5 px); one under 1 px after resizing is dropped. A source
  // of its own: the loaders above still prefetch from `source` in their workers.
  auto tiny = std::make_shared<MemorySource>(*source);
  tiny->items[0] = syntheticItem(1, 100, 200, {{10, 20, 30, 40}, {50, 50, 0, 10}});
  tiny->items[0].annotations[1].bbox = {50, 50, 0.5, 10};  // 0.75 px once resized
  Loader small(tiny, o, plain_epoch);
  QCOMPARE(small.next()->targets[0].size(), size_t(1));
}

void TestLoader::flippedRealSamplesMirror() {
  // Same seed with and without flips: the same order; each flipped image, its boxes and its
  // masks are the mirror of the unflipped ones.
  LoaderOptions o = smallOptions();
  o.skip_crowd_during_training = false;
  Loader flips(train_source_, o);
  o.augment_input_data = false;
  Loader plain(train_source_, o);
  const auto a = take(flips, 8), b = take(plain, 8);
  int mirrored = 0;
  for (size_t k = 0; k < a.size(); ++k)
    for (size_t i = 0; i < a[k].size(); ++i) {
      const ImageMeta& m = a[k].meta[i];
      QCOMPARE(m.image_id, b[k].meta[i].image_id);
      QVERIFY(!b[k].meta[i].flipped);
      const Targets& ft = a[k].targets[i];
      const Targets& pt = b[k].targets[i];
      QCOMPARE(ft.annotation_ids, pt.annotation_ids);
      if (!m.flipped) {
        QCOMPARE(ft.boxes, pt.boxes);
        QCOMPARE(ft.masks, pt.masks);
        continue;
      }
      ++mirrored;
      const auto w = float(m.width);
      const size_t plane = size_t(m.height) * size_t(m.width);
      for (size_t n = 0; n < ft.size(); ++n) {
        QCOMPARE(ft.boxes[4 * n], w - pt.boxes[4 * n + 2]);
        QCOMPARE(ft.boxes[4 * n + 2], w - pt.boxes[4 * n]);
        QCOMPARE(ft.boxes[4 * n + 1], pt.boxes[4 * n + 1]);
        for (int y = 0; y < m.height; y += 7)
          for (int x = 0; x < m.width; ++x)
            QCOMPARE(ft.masks[n * plane + size_t(y * m.width + x)],
                     pt.masks[n * plane + size_t(y * m.width + m.width - 1 - x)]);
      }
      const auto bh = size_t(a[k].height), bw = size_t(a[k].width);
      for (size_t c = 0; c < 3; ++c)
        for (size_t y = 0; y < size_t(m.height); y += 5)
          for (size_t x = 0; x < size_t(m.width); ++x)
            QCOMPARE(a[k].images[((i * 3 + c) * bh + y) * bw + x],
                     b[k].images[((i * 3 + c) * bh + y) * bw + size_t(m.width) - 1 - x]);
    }
  QVERIFY(mirrored > 0);
}

void TestLoader::masksAlignWithBoxes() {
  // The shapes' boxes are the extents of their masks (pycocotools' toBbox): resized, the mask's
  // extent stays within a pixel of the resized box, flipped or not, in both modes.
  for (const ResizeMode mode : {ResizeMode::kShorterSide, ResizeMode::kFixed}) {
    LoaderOptions o = smallOptions();
    o.resize_mode = mode;
    o.image_height = 200;
    o.image_width = 256;
    o.skip_crowd_during_training = false;
    Loader loader(shapes_source_, o);
    int checked = 0, flipped = 0;
    for (const Batch& batch : take(loader, shapes_source_->size() / o.batch_size)) {
      for (size_t i = 0; i < batch.size(); ++i) {
        const ImageMeta& m = batch.meta[i];
        flipped += m.flipped;
        const Targets& t = batch.targets[i];
        const size_t plane = size_t(m.height) * size_t(m.width);
        QCOMPARE(t.masks.size(), t.size() * plane);
        for (size_t n = 0; n < t.size(); ++n) {
          const auto e = maskExtent(t.masks.data() + n * plane, m.height, m.width);
          if (e[0] < 0) continue;  // too thin to survive the threshold
          for (size_t k = 0; k < 4; ++k)
            QVERIFY2(std::abs(float(e[k]) - t.boxes[4 * n + k]) <= 1.0f,
                     qPrintable(QString("image %1 annotation %2: mask edge %3 vs box %4")
                                    .arg(m.image_id)
                                    .arg(t.annotation_ids[n])
                                    .arg(e[k])
                                    .arg(t.boxes[4 * n + k])));
          ++checked;
        }
      }
    }
    QVERIFY(checked > 20 && flipped > 0);
  }
}

void TestLoader::crowdSkippedOnlyWhenAsked() {
  std::set<int64_t> crowd_ids;
  for (const CocoAnnotation& a : train_->annotations())
    if (a.iscrowd) crowd_ids.insert(a.id);
  QVERIFY(!crowd_ids.empty());
  auto crowdSeen = [&](LoaderOptions o) {
    o.load_masks = false;
    o.max_num_instances = 0;
    Loader loader(train_source_, o);
    std::set<int64_t> seen;
    for (const Batch& b : take(loader, train_source_->size() / o.batch_size))
      for (const Targets& t : b.targets)
        for (size_t n = 0; n < t.size(); ++n)
          if (t.iscrowd[n]) seen.insert(t.annotation_ids[n]);
    return seen;
  };
  LoaderOptions o = smallOptions();
  QVERIFY(crowdSeen(o).empty());
  o.skip_crowd_during_training = false;
  QCOMPARE(crowdSeen(o), crowd_ids);
  o.skip_crowd_during_training = true;
  o.training = false;  // evaluation keeps them
  o.eval_samples = 0;
  QCOMPARE(crowdSeen(o), crowd_ids);
}

void TestLoader::maxNumInstancesKeepsTheFirst() {
  LoaderOptions o = smallOptions();
  o.load_masks = false;
  o.max_num_instances = 0;
  Loader all(train_source_, o);
  o.max_num_instances = 3;
  Loader capped(train_source_, o);
  const auto a = take(all, 8), c = take(capped, 8);
  int cut = 0;
  for (size_t k = 0; k < a.size(); ++k)
    for (size_t i = 0; i < a[k].size(); ++i) {
      const auto& ids = a[k].targets[i].annotation_ids;
      const std::vector<int64_t> first(ids.begin(),
                                       ids.begin() + ptrdiff_t(std::min<size_t>(3, ids.size())));
      QCOMPARE(c[k].targets[i].annotation_ids, first);
      cut += ids.size() > 3;
      // File order: the ids come in the json's order for their image.
      const auto image_index = *train_->imageIndex(a[k].meta[i].image_id);
      std::vector<int64_t> file_order;
      for (const uint32_t n : train_->annotationsOfImage(image_index))
        file_order.push_back(train_->annotations()[n].id);
      size_t at = 0;
      for (const int64_t id : ids) {
        while (at < file_order.size() && file_order[at] != id)
          ++at;
        QVERIFY2(at < file_order.size(), "annotation out of file order");
      }
    }
  QVERIFY(cut > 0);
}

void TestLoader::labelsAreContiguous() {
  LoaderOptions o = smallOptions();
  o.load_masks = false;
  o.training = false;
  o.eval_samples = 0;
  Loader loader(train_source_, o);
  std::map<int64_t, int64_t> category_of;
  for (const CocoAnnotation& a : train_->annotations())
    category_of[a.id] = a.category_id;
  const std::vector<int64_t> ids = train_source_->categoryIds();
  QCOMPARE(ids.size(), size_t(80));
  QVERIFY(std::is_sorted(ids.begin(), ids.end()));
  QVERIFY(ids.back() > 80);  // COCO's ids have gaps: 1..90
  size_t instances = 0;
  for (const Batch& b : takeAll(loader))
    for (const Targets& t : b.targets)
      for (size_t n = 0; n < t.size(); ++n, ++instances) {
        QVERIFY(t.labels[n] >= 1 && t.labels[n] <= 80);
        QCOMPARE(ids[size_t(t.labels[n] - 1)], category_of.at(t.annotation_ids[n]));
      }
  QVERIFY(instances > 200);
}

void TestLoader::paddingToTheMultiple() {
  for (const uint32_t divisibility : {32u, 64u, 1u}) {
    LoaderOptions o = smallOptions();
    o.size_divisibility = divisibility;
    o.load_masks = false;
    Loader loader(train_source_, o);
    for (const Batch& b : take(loader, 8)) {
      int max_h = 0, max_w = 0;
      for (const ImageMeta& m : b.meta) {
        max_h = std::max(max_h, m.height);
        max_w = std::max(max_w, m.width);
      }
      QCOMPARE(b.height, roundUp(max_h, int(divisibility)));
      QCOMPARE(b.width, roundUp(max_w, int(divisibility)));
      QCOMPARE(b.images.size(), b.size() * 3 * size_t(b.height) * size_t(b.width));
    }
  }
  // fixed: the canvas rounded up to 2^max_level, whatever the images.
  LoaderOptions o = smallOptions();
  o.resize_mode = ResizeMode::kFixed;
  o.image_height = 400;
  o.image_width = 600;
  o.max_level = 6;
  o.load_masks = false;
  Loader loader(train_source_, o);
  const Batch b = *loader.next();
  QCOMPARE(b.height, 448);
  QCOMPARE(b.width, 640);
  for (const ImageMeta& m : b.meta)
    QVERIFY(m.height == 400 || m.width == 600);
}

void TestLoader::badImagesSkippedAndCounted() {
  // A copy of tinycoco val with image 1 missing, image 3 truncated (half its bytes) and
  // image 4 replaced by text: the loader delivers the three good ones, in order, and says why
  // it skipped each of the others.
  const fs::path folder = fs::path(temp_.path().toStdString()) / "bad";
  fs::create_directories(folder);
  const auto images = val_->images();
  QCOMPARE(images.size(), size_t(6));
  for (size_t i = 0; i < images.size(); ++i) {
    const fs::path from = tinycoco_ / "images" / "val2017" / std::string(images[i].file_name);
    const fs::path to = folder / std::string(images[i].file_name);
    if (i == 1) continue;
    if (i == 3) {
      const std::vector<uint8_t> bytes = readRaw<uint8_t>(from);
      writeRaw(to,
               std::vector<uint8_t>(bytes.begin(), bytes.begin() + ptrdiff_t(bytes.size() / 2)));
    } else if (i == 4) {
      std::ofstream(to) << "not an image";
    } else {
      fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    }
  }
  auto source = std::make_shared<CocoFolderSource>(val_, folder);
  for (const uint32_t workers : {2u, 0u}) {
    LoaderOptions o = smallOptions();
    o.training = false;
    o.eval_samples = 0;
    o.batch_size = 2;
    o.n_workers = workers;
    o.load_masks = false;
    Loader loader(source, o);
    const std::vector<Batch> batches = takeAll(loader);
    const std::vector<int64_t> expected{images[0].id, images[2].id, images[5].id};
    QCOMPARE(imageIds(batches), expected);
    QCOMPARE(batches.size(), size_t(2));
    const LoaderStats stats = loader.stats();
    QCOMPARE(stats.skipped_images, uint64_t(3));
    QCOMPARE(stats.images, uint64_t(3));
    const std::vector<LoaderWarning> warnings = loader.warnings();
    QCOMPARE(warnings.size(), size_t(3));
    QCOMPARE(warnings[0].code, LoaderWarningCode::kMissingImage);
    QCOMPARE(warnings[0].image_id, images[1].id);
    QCOMPARE(warnings[1].code, LoaderWarningCode::kCorruptImage);
    QCOMPARE(warnings[1].image_id, images[3].id);
    QVERIFY(warnings[1].message.find("truncated") != std::string::npos);
    QCOMPARE(warnings[2].code, LoaderWarningCode::kCorruptImage);
    QCOMPARE(warnings[2].image_id, images[4].id);
    QVERIFY(warnings[0].message.find(std::string(images[1].file_name)) != std::string::npos);
    // Each warning came with the batch that was filled past its image.
    QCOMPARE(batches[0].warnings.size(), size_t(1));
    QCOMPARE(batches[1].warnings.size(), size_t(2));
    QCOMPARE(loader.takeWarnings().size(), size_t(3));
    QVERIFY(loader.takeWarnings().empty());
  }
}

void TestLoader::everyImageBadEndsWithAnError() {
  // No image file at all: training (which repeats epochs) and evaluation both end with a
  // LoaderError naming the problem, instead of looping or crashing.
  const fs::path empty = fs::path(temp_.path().toStdString()) / "empty";
  fs::create_directories(empty);
  auto source = std::make_shared<CocoFolderSource>(train_, empty);
  for (const bool training : {true, false}) {
    for (const uint32_t workers : {2u, 0u}) {
      LoaderOptions o = smallOptions();
      o.training = training;
      o.n_workers = workers;
      Loader loader(source, o);
      QString message;
      try {
        loader.next();
      } catch (const LoaderError& e) {
        message = e.what();
      }
      QVERIFY2(message.contains("yields no batch") && message.contains("32 of 32") &&
                   message.contains("missing_image"),
               qPrintable(message));
      QVERIFY_THROWS_EXCEPTION(LoaderError, loader.next());   // stays failed
      QCOMPARE(loader.stats().skipped_images, uint64_t(32));  // each one reported
      QCOMPARE(loader.warnings().front().code, LoaderWarningCode::kMissingImage);
    }
  }
}

void TestLoader::evalOrderIsFileOrder() {
  LoaderOptions o = smallOptions();
  o.training = false;
  o.eval_samples = 4;
  o.batch_size = 3;
  Loader loader(val_source_, o);
  const std::vector<Batch> batches = takeAll(loader);
  QCOMPARE(batches.size(), size_t(2));
  QCOMPARE(batches[1].size(), size_t(1));  // evaluation keeps the short last batch
  std::vector<int64_t> expected;
  for (size_t i = 0; i < 4; ++i)
    expected.push_back(val_->images()[i].id);
  QCOMPARE(imageIds(batches), expected);
  for (const Batch& b : batches)
    for (const ImageMeta& m : b.meta)
      QVERIFY(!m.flipped);
  QVERIFY(!loader.next());  // stays ended
  loader.reset(0);
  QCOMPARE(imageIds(takeAll(loader)), expected);
  o.eval_samples = 0;
  Loader everything(val_source_, o);
  QCOMPARE(imageIds(takeAll(everything)).size(), size_t(6));
}

void TestLoader::earlyStopAndWaitTime() {
  // The consumer takes one batch and drops the loader while workers are busy and the queue
  // is full: the destructor joins promptly.
  const auto t0 = std::chrono::steady_clock::now();
  {
    LoaderOptions o = smallOptions();
    o.prefetch_buffer_size = 1;
    Loader loader(train_source_, o);
    QVERIFY(loader.next());
    const LoaderStats stats = loader.stats();
    QCOMPARE(stats.batches, uint64_t(1));
    QCOMPARE(stats.images, uint64_t(4));
    QVERIFY(stats.wait_seconds > 0 && stats.wait_seconds == stats.last_wait_seconds);
  }
  {
    LoaderOptions o = smallOptions();
    Loader never_read(train_source_, o);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  QVERIFY2(seconds < 20, qPrintable(QString::number(seconds)));
}

void TestLoader::shardsGiveTheSameSamples() {
  // tinycoco val through dataset_convert into 4 shards: the shard source gives the json's
  // order, and the same images and targets as the json + folder source, except annotations
  // dataset_convert leaves out (TAO's box rule).
  const fs::path out = fs::path(temp_.path().toStdString()) / "shards";
  ConvertOptions convert;
  convert.image_dir = tinycoco_ / "images" / "val2017";
  convert.annotations = tinycoco_ / "annotations" / "instances_val2017.json";
  convert.output_dir = out;
  convert.tag = "val";
  convert.num_shards = 4;
  convert.threads = 2;
  const ConvertResult converted = convertDataset(convert);
  QCOMPARE(converted.images_written, uint64_t(6));
  const std::vector<fs::path> files = shardFilesMatching((out / "val-*-of-*").string());
  QCOMPARE(files.size(), size_t(4));
  auto shards = std::make_shared<ShardSource>(files);
  QCOMPARE(shards->size(), size_t(6));
  QCOMPARE(shards->categoryIds(), val_source_->categoryIds());

  LoaderOptions o = smallOptions();
  o.training = false;
  o.eval_samples = 0;
  o.batch_size = 2;
  Loader from_json(val_source_, o);
  Loader from_shards(shards, o);
  const auto a = takeAll(from_json), b = takeAll(from_shards);
  QCOMPARE(imageIds(b), imageIds(a));
  size_t compared = 0, left_out = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    QVERIFY(a[k].images == b[k].images);
    for (size_t i = 0; i < a[k].size(); ++i) {
      const Targets& x = a[k].targets[i];
      const Targets& y = b[k].targets[i];
      const size_t plane = size_t(a[k].meta[i].height) * size_t(a[k].meta[i].width);
      size_t n = 0;
      for (size_t m = 0; m < x.size(); ++m) {
        if (n == y.size() || y.annotation_ids[n] != x.annotation_ids[m]) {
          ++left_out;
          continue;
        }
        QVERIFY(std::equal(x.boxes.begin() + ptrdiff_t(4 * m),
                           x.boxes.begin() + ptrdiff_t(4 * m + 4),
                           y.boxes.begin() + ptrdiff_t(4 * n)));
        QCOMPARE(y.labels[n], x.labels[m]);
        QCOMPARE(y.iscrowd[n], x.iscrowd[m]);
        QVERIFY(std::equal(x.masks.begin() + ptrdiff_t(m * plane),
                           x.masks.begin() + ptrdiff_t((m + 1) * plane),
                           y.masks.begin() + ptrdiff_t(n * plane)));
        ++n;
        ++compared;
      }
      QCOMPARE(n, y.size());
    }
  }
  QVERIFY(compared > 50);
  QVERIFY(left_out <= converted.annotations_skipped);

  // Training on shards: the same stream with 2 workers as without.
  o = smallOptions();
  o.batch_size = 2;
  Loader two(shards, o);
  o.n_workers = 0;
  Loader none(shards, o);
  const auto t2 = take(two, 6), t0 = take(none, 6);
  for (size_t k = 0; k < t2.size(); ++k)
    QVERIFY(difference(t2[k], t0[k]).isEmpty());

  // A damaged record fails its checksum: skipped with a warning, not a crash.
  const fs::path damaged = out / "damaged";
  fs::create_directories(damaged);
  for (const fs::path& f : files)
    fs::copy_file(f, damaged / f.filename());
  std::vector<uint8_t> bytes = readRaw<uint8_t>(damaged / files[0].filename());
  bytes[bytes.size() / 2] ^= 0x5A;
  writeRaw(damaged / files[0].filename(), bytes);
  o = smallOptions();
  o.training = false;
  o.eval_samples = 0;
  o.batch_size = 2;
  Loader partly(std::make_shared<ShardSource>(shardFilesMatching((damaged / "val-*").string())), o);
  QCOMPARE(imageIds(takeAll(partly)).size(), size_t(5));
  QCOMPARE(partly.stats().skipped_images, uint64_t(1));
  QCOMPARE(partly.warnings().at(0).code, LoaderWarningCode::kUnreadableImage);
  // Shards without masks cannot feed a loader that wants masks.
  convert.include_mask = false;
  convert.tag = "nomask";
  convertDataset(convert);
  auto no_masks = std::make_shared<ShardSource>(shardFilesMatching((out / "nomask-*").string()));
  QVERIFY(!no_masks->hasMasks());
  QVERIFY_THROWS_EXCEPTION(LoaderError, Loader(no_masks, o));
  o.load_masks = false;
  Loader boxes_only(no_masks, o);
  QCOMPARE(imageIds(takeAll(boxes_only)), imageIds(a));
}

QTEST_GUILESS_MAIN(TestLoader)
#include "test_loader.moc"

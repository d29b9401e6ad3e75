// The data loader's generator and resize: the PRNG as described, the resize of both modes
// against the formulas and against torchvision (sizes, batch padding, pixel values, masks).
// Expected values from torch and torchvision come from loader_oracle.py, run once with
// MRCNN_PYTHON (initTestCase); the stream and the samples: test_loader_samples.cpp.
#include "tests/dataset/loader_test.h"

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
  const std::vector<uint8_t> masks = wholeMasks(t, h, w);
  for (size_t i = 0; i < t.size(); ++i) {
    const auto at =
        std::find(oracle_mask_ids_.begin(), oracle_mask_ids_.end(), t.annotation_ids[i]);
    QVERIFY(at != oracle_mask_ids_.end());
    const size_t r = size_t(at - oracle_mask_ids_.begin());
    for (size_t p = 0; p < plane; ++p)
      differing += masks[i * plane + p] != reference[r * plane + p];
    compared += plane;
  }
  // Only pixels whose interpolated value is within rounding of 0.5 may differ.
  qInfo("%zu masks, %zu of %zu pixels differ from torch's bilinear >= 0.5", t.size(), differing,
        compared);
  QVERIFY2(differing * 100000 <= compared, qPrintable(QString::number(differing)));
}

QTEST_GUILESS_MAIN(TestLoader)

// Tiled inference (engine/inference/tiling.h, tiled_backend.h): the grid on sides that are and
// are not multiples of the stride, and objects cut by tile borders merged back whole. The
// backend under the tiler is a real detector of its own: each connected region of non-black
// pixels it is given is one detection (its box, its pixels as the mask, a score that grows with
// its area), so a tile that holds part of an object reports that part only, as a model would.
// The tiler with the engine's model and OpenVINO: tests/app/test_tiled_inference.cpp.
// LibTorch's headers before Qt's (Qt's `slots` macro).
// clang-format off
#include <ATen/ATen.h>
#include <opencv2/imgproc.hpp>

#include "dataset/mask/rle.h"
#include "engine/inference/coco_results.h"
#include "engine/inference/tiled_backend.h"
#include "engine/inference/tiling.h"
#include "engine/model/postprocess.h"

#include <QtTest/QtTest>
// clang-format on

namespace {

using namespace mrcnn::engine;

class RegionDetector final : public InferenceBackend {
 public:
  std::string description() const override { return "regions"; }
  std::string precision() const override { return "exact"; }
  BackendRun run(const std::vector<std::filesystem::path>&) override { return {}; }
  std::vector<mrcnn::model::ImageDetections> detect(const std::vector<cv::Mat>& images) override {
    std::vector<mrcnn::model::ImageDetections> out;
    for (const cv::Mat& bgr : images) {
      ++images_seen;
      cv::Mat gray, labels, stats, centroids;
      cv::cvtColor(bgr, gray, cv::COLOR_BGR2GRAY);
      const cv::Mat foreground = gray > 0;
      const int n = cv::connectedComponentsWithStats(foreground, labels, stats, centroids, 8);
      mrcnn::model::ImageDetections d;
      const int64_t k = n - 1;
      d.boxes = at::empty({k, 4}, at::kFloat);
      d.scores = at::empty({k}, at::kFloat);
      d.labels = at::ones({k}, at::kLong);
      d.masks = at::zeros({k, bgr.rows, bgr.cols}, at::kByte);
      for (int i = 1; i < n; ++i) {
        const int x = stats.at<int>(i, cv::CC_STAT_LEFT), y = stats.at<int>(i, cv::CC_STAT_TOP);
        const int w = stats.at<int>(i, cv::CC_STAT_WIDTH), h = stats.at<int>(i, cv::CC_STAT_HEIGHT);
        d.boxes[i - 1][0] = x;
        d.boxes[i - 1][1] = y;
        d.boxes[i - 1][2] = x + w;
        d.boxes[i - 1][3] = y + h;
        d.scores[i - 1] = std::min(1.0, stats.at<int>(i, cv::CC_STAT_AREA) / 100000.0);
        cv::Mat region = labels == i;
        d.masks[i - 1].copy_(at::from_blob(region.data, {bgr.rows, bgr.cols}, at::kByte) / 255);
      }
      out.push_back(d);
    }
    return out;
  }
  int images_seen = 0;
};

double maskIoU(const at::Tensor& a, const at::Tensor& b) {
  const double inter = at::logical_and(a, b).sum().item<double>();
  const double uni = at::logical_or(a, b).sum().item<double>();
  return uni > 0 ? inter / uni : 0.0;
}

TileOptions tiles(int size, double overlap, TileMerge merge = TileMerge::kNmm) {
  TileOptions o;
  o.size = size;
  o.overlap = overlap;
  o.merge = merge;
  return o;
}

}  // namespace

class TilingTest : public QObject {
  Q_OBJECT
 private slots:
  // 1000 x 700 in tiles of 512 overlapping by 102 px: columns at 0, 410 and 488 (the last moved
  // back to end at the edge), rows at 0 and 188; every pixel covered, none outside.
  void theGridOnSidesThatAreNotMultiplesOfTheStride() {
    const std::vector<Tile> grid = tileGrid(700, 1000, tiles(512, 0.2));
    QCOMPARE(grid.size(), size_t{6});
    std::vector<int> xs, ys;
    for (const Tile& t : grid) {
      QCOMPARE(t.width, 512);
      QCOMPARE(t.height, 512);
      QVERIFY(t.x >= 0 && t.y >= 0 && t.x + t.width <= 1000 && t.y + t.height <= 700);
      if (t.y == 0) xs.push_back(t.x);
      if (t.x == 0) ys.push_back(t.y);
    }
    QVERIFY(xs == (std::vector<int>{0, 410, 488}));
    QVERIFY(ys == (std::vector<int>{0, 188}));
    at::Tensor covered = at::zeros({700, 1000}, at::kInt);
    for (const Tile& t : grid)
      covered.slice(0, t.y, t.y + t.height).slice(1, t.x, t.x + t.width) += 1;
    QVERIFY(covered.min().item<int>() >= 1);
    // A side that fits one tile is one tile of that side; a whole image that fits is one.
    const std::vector<Tile> tall = tileGrid(1500, 300, tiles(512, 0.25));
    for (const Tile& t : tall)
      QVERIFY(t.x == 0 && t.width == 300 && t.y + t.height <= 1500);
    QCOMPARE(tileGrid(512, 400, tiles(512, 0.2)).size(), size_t{1});
  }

  // Objects across a tile border: one that a single tile holds whole (the other sees a
  // piece), one that no tile holds whole. nmm gives each once, its mask the untiled one.
  void anObjectCutByATileBorderComesOutOnceAndWhole() {
    cv::Mat image(700, 1000, CV_8UC3, cv::Scalar(0, 0, 0));
    cv::ellipse(image, {510, 150}, {60, 40}, 0, 0, 360, cv::Scalar(200, 100, 50), cv::FILLED);
    cv::ellipse(image, {500, 450}, {150, 60}, 0, 0, 360, cv::Scalar(40, 220, 90), cv::FILLED);
    RegionDetector alone;
    const mrcnn::model::ImageDetections untiled = alone.detect({image}).front();
    QCOMPARE(untiled.boxes.size(0), int64_t{2});

    auto inner = std::make_unique<RegionDetector>();
    RegionDetector* seen = inner.get();
    auto tiled = makeTiledBackend(std::move(inner), tiles(512, 0.2));
    const mrcnn::model::ImageDetections merged = tiled->detect({image}).front();
    QCOMPARE(seen->images_seen, 6);
    QCOMPARE(merged.boxes.size(0), int64_t{2});
    // The merged masks are crops of the image (mask_origins), each whole inside its window.
    QVERIFY(merged.mask_origins.defined());
    QCOMPARE(merged.image_size[0], int64_t{700});
    QCOMPARE(merged.image_size[1], int64_t{1000});
    QVERIFY(merged.masks.size(1) < 700 && merged.masks.size(2) < 1000);
    for (int64_t i = 0; i < 2; ++i) {
      double best = 0;
      for (int64_t j = 0; j < 2; ++j)
        best = std::max(best, maskIoU(mrcnn::model::wholeImageMask(merged, i), untiled.masks[j]));
      QVERIFY2(best >= 0.95, qPrintable(QString("object %1: mask IoU %2").arg(i).arg(best)));
    }
    QVERIFY(at::allclose(std::get<0>(merged.boxes.sort(0)), std::get<0>(untiled.boxes.sort(0))));

    // nms only drops: a piece whose IoU with the whole is under the threshold (a sliver in the
    // next row of tiles) stays as a detection of its own. Why nmm is the default.
    auto nms =
        makeTiledBackend(std::make_unique<RegionDetector>(), tiles(512, 0.2, TileMerge::kNms));
    QVERIFY(nms->detect({image}).front().boxes.size(0) > 2);
  }

  // Two detections of one tile are never merged: a dot inside a ring (its box inside the
  // ring's: intersection over the smaller box 1) in the corner only the first tile covers
  // comes out as two detections, as the detector gave them.
  void detectionsOfOneTileAreNotMergedWithEachOther() {
    cv::Mat image(700, 1000, CV_8UC3, cv::Scalar(0, 0, 0));
    cv::circle(image, {150, 90}, 65, cv::Scalar(200, 100, 50), 10);
    cv::circle(image, {150, 90}, 12, cv::Scalar(200, 100, 50), cv::FILLED);
    QCOMPARE(RegionDetector().detect({image}).front().boxes.size(0), int64_t{2});
    auto tiled = makeTiledBackend(std::make_unique<RegionDetector>(), tiles(512, 0.2));
    QCOMPARE(tiled->detect({image}).front().boxes.size(0), int64_t{2});
  }

  // A tile that saw an object whole keeps its box: another tile's larger, lower-scored box
  // around it (a false detection at an intersection over the smaller box of 1) is dropped,
  // not merged into it; an object cut by its tile still grows by the other tile's view, past
  // the cut side only.
  void aWholeViewIsNotGrownByAnotherTilesBox() {
    // One detection in the left tile (its origin the image's) and one in the right tile
    // (boxes given in the image's pixels here, moved into the tile's), merged: the one box
    // that comes out, and its score.
    const Tile left{0, 0, 512, 512}, right{410, 0, 512, 512};
    auto merge = [&](std::array<float, 4> in_left, float left_score, std::array<float, 4> in_right,
                     float right_score) {
      auto one = [](std::array<float, 4> box, float score) {
        mrcnn::model::ImageDetections d;
        d.boxes = at::tensor(std::vector<float>(box.begin(), box.end()), at::kFloat).view({1, 4});
        d.scores = at::tensor({score}, at::kFloat);
        d.labels = at::ones({1}, at::kLong);
        return d;
      };
      in_right[0] -= 410;
      in_right[2] -= 410;
      const mrcnn::model::ImageDetections out =
          mergeTiles({{left, one(in_left, left_score)}, {right, one(in_right, right_score)}}, 700,
                     1000, tiles(512, 0.2));
      return out;
    };
    // The object at x 440-470 lies inside both tiles, away from their borders.
    const mrcnn::model::ImageDetections kept =
        merge({440, 100, 470, 130}, 0.9f, {420, 60, 600, 200}, 0.3f);
    QCOMPARE(kept.boxes.size(0), int64_t{1});
    QVERIFY(at::equal(kept.boxes[0], at::tensor({440.0f, 100.0f, 470.0f, 130.0f})));

    // The same object cut by the left tile's right border (x 500-512 seen there), whole in
    // the right tile at a lower score: the union, the object's whole box.
    const mrcnn::model::ImageDetections grown =
        merge({500, 100, 512, 130}, 0.9f, {500, 100, 540, 130}, 0.5f);
    QCOMPARE(grown.boxes.size(0), int64_t{1});
    QVERIFY(at::equal(grown.boxes[0], at::tensor({500.0f, 100.0f, 540.0f, 130.0f})));
    QCOMPARE(grown.scores[0].item<float>(), 0.9f);

    // A cut view grows past its cut side only: a larger box from the other tile adds what lies
    // beyond the left tile's right border, not what lies above, below or left of the piece.
    const mrcnn::model::ImageDetections sided =
        merge({500, 100, 512, 130}, 0.9f, {480, 60, 560, 200}, 0.3f);
    QCOMPARE(sided.boxes.size(0), int64_t{1});
    QVERIFY(at::equal(sided.boxes[0], at::tensor({500.0f, 100.0f, 560.0f, 130.0f})));
  }

  // An image no larger than a tile is not tiled: the inner backend's own result.
  void aTileLargerThanTheImageRunsItWhole() {
    cv::Mat image(300, 400, CV_8UC3, cv::Scalar(0, 0, 0));
    cv::circle(image, {200, 150}, 50, cv::Scalar(255, 255, 255), cv::FILLED);
    auto inner = std::make_unique<RegionDetector>();
    RegionDetector* seen = inner.get();
    auto tiled = makeTiledBackend(std::move(inner), tiles(512, 0.2));
    const mrcnn::model::ImageDetections d = tiled->detect({image}).front();
    QCOMPARE(seen->images_seen, 1);
    QCOMPARE(d.boxes.size(0), int64_t{1});
    QCOMPARE(d.masks.size(1), int64_t{300});
  }

  // The whole image as one more tile: its detection merges with the tiles' pieces.
  void theWholeImageJoinsTheTiles() {
    cv::Mat image(700, 1000, CV_8UC3, cv::Scalar(0, 0, 0));
    cv::rectangle(image, {300, 100}, {700, 300}, cv::Scalar(90, 90, 90), cv::FILLED);
    TileOptions o = tiles(512, 0.2);
    o.full_image = true;
    auto inner = std::make_unique<RegionDetector>();
    RegionDetector* seen = inner.get();
    auto tiled = makeTiledBackend(std::move(inner), o);
    const mrcnn::model::ImageDetections d = tiled->detect({image}).front();
    QCOMPARE(seen->images_seen, 7);
    QCOMPARE(d.boxes.size(0), int64_t{1});
    QCOMPARE(mrcnn::model::wholeImageMask(d, 0).sum().item<int64_t>(), int64_t{401 * 201});
    QCOMPARE(mrcnn::model::wholeImageMask(d, 0)
                 .slice(0, 100, 301)
                 .slice(1, 300, 701)
                 .sum()
                 .item<int64_t>(),
             int64_t{401 * 201});
  }

  // The results of a large image: each mask is encoded from the part that holds it, and the
  // runs are those of the mask API on the whole mask (pycocotools' encode), for masks at the
  // image's edges and corners, of one pixel, empty and full, and random ones.
  void largeImageMasksAreEncodedAsTheMaskApiDoes() {
    const int64_t h = 300, w = 517;
    std::vector<at::Tensor> masks;
    const auto box = [&](int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
      at::Tensor m = at::zeros({h, w}, at::kByte);
      m.slice(0, y0, y1).slice(1, x0, x1).fill_(1);
      return m;
    };
    masks.push_back(box(0, 1, 0, 1));          // the first pixel
    masks.push_back(box(h - 1, h, w - 1, w));  // the last
    masks.push_back(box(0, h, 10, 20));        // whole columns
    masks.push_back(box(40, 90, 0, w));        // whole rows
    masks.push_back(box(120, 121, 300, 301));  // one pixel inside
    masks.push_back(at::zeros({h, w}, at::kByte));
    masks.push_back(at::ones({h, w}, at::kByte));
    at::manual_seed(7);
    for (int i = 0; i < 20; ++i) {
      const int64_t y = at::randint(0, h - 40, {1}).item<int64_t>();
      const int64_t x = at::randint(0, w - 60, {1}).item<int64_t>();
      at::Tensor m = at::zeros({h, w}, at::kByte);
      m.slice(0, y, y + 40).slice(1, x, x + 60).copy_(at::rand({40, 60}).gt(0.5));
      masks.push_back(m);
    }
    mrcnn::model::ImageDetections d;
    const int64_t n = static_cast<int64_t>(masks.size());
    d.masks = at::stack(masks);
    d.boxes = at::zeros({n, 4}, at::kFloat);
    d.scores = at::ones({n}, at::kFloat);
    d.labels = at::ones({n}, at::kLong);
    const std::vector<CocoInstance> found = cocoInstances(d, {0, 1});
    QCOMPARE(static_cast<int64_t>(found.size()), n);
    for (int64_t k = 0; k < n; ++k) {
      const at::Tensor column_major = d.masks[k].t().contiguous();
      const mrcnn::dataset::Rle whole = mrcnn::dataset::encodeColumnMajor(
          {column_major.data_ptr<uint8_t>(), static_cast<size_t>(column_major.numel())},
          static_cast<uint32_t>(h), static_cast<uint32_t>(w));
      QVERIFY2(found[static_cast<size_t>(k)].mask.has_value(), qPrintable(QString::number(k)));
      QVERIFY2(*found[static_cast<size_t>(k)].mask == whole,
               qPrintable("mask " + QString::number(k) + " encoded differently"));
    }

    // The same masks as a tiled image's detections hold them: crops of 50 x 70 at random
    // origins that keep each foreground inside (those too large for the window left out),
    // encoded as the whole masks are.
    std::vector<int64_t> kept;
    std::vector<at::Tensor> crops;
    std::vector<int64_t> origins;
    const int64_t ch = 50, cw = 70;
    for (int64_t k = 0; k < n; ++k) {
      const at::Tensor m = d.masks[k];
      const at::Tensor rows = at::nonzero(m.any(1)), cols = at::nonzero(m.any(0));
      int64_t fy0 = 0, fy1 = 0, fx0 = 0, fx1 = 0;
      if (rows.size(0) > 0) {
        fy0 = rows[0][0].item<int64_t>();
        fy1 = rows[-1][0].item<int64_t>() + 1;
        fx0 = cols[0][0].item<int64_t>();
        fx1 = cols[-1][0].item<int64_t>() + 1;
      }
      if (fy1 - fy0 > ch || fx1 - fx0 > cw) continue;
      const int64_t ry = at::randint(0, ch - (fy1 - fy0) + 1, {1}).item<int64_t>();
      const int64_t rx = at::randint(0, cw - (fx1 - fx0) + 1, {1}).item<int64_t>();
      const int64_t y = std::max<int64_t>(0, std::min(fy0 - ry, h - ch));
      const int64_t x = std::max<int64_t>(0, std::min(fx0 - rx, w - cw));
      crops.push_back(m.slice(0, y, y + ch).slice(1, x, x + cw));
      origins.insert(origins.end(), {x, y});
      kept.push_back(k);
    }
    QVERIFY(kept.size() >= 22);
    const int64_t m = static_cast<int64_t>(kept.size());
    mrcnn::model::ImageDetections cropped;
    cropped.masks = at::stack(crops).contiguous();
    cropped.mask_origins = at::tensor(origins, at::kLong).view({m, 2});
    cropped.image_size = {h, w};
    cropped.boxes = at::zeros({m, 4}, at::kFloat);
    cropped.scores = at::ones({m}, at::kFloat);
    cropped.labels = at::ones({m}, at::kLong);
    const std::vector<CocoInstance> from_crops = cocoInstances(cropped, {0, 1});
    for (int64_t i = 0; i < m; ++i) {
      const size_t k = static_cast<size_t>(kept[static_cast<size_t>(i)]);
      QVERIFY2(*from_crops[static_cast<size_t>(i)].mask == *found[k].mask,
               qPrintable("mask " + QString::number(k) + " encoded differently from its crop"));
      QVERIFY(
          at::equal(mrcnn::model::wholeImageMask(cropped, i), d.masks[static_cast<int64_t>(k)]));
    }
  }

  void badTileOptionsAreNamed() {
    const auto refused = [](TileOptions o, const char* name) {
      try {
        checkTileOptions(o);
      } catch (const std::invalid_argument& e) {
        return std::string(e.what()).rfind(name, 0) == 0;
      }
      return false;
    };
    QVERIFY(refused(tiles(512, 1.0), "--tile-overlap"));
    QVERIFY(refused(tiles(512, -0.1), "--tile-overlap"));
    QVERIFY(refused(tiles(8, 0.2), "--tile "));
    QVERIFY(!refused(tiles(512, 0.0), "--tile"));
    try {
      parseTileMerge("union");
      QFAIL("--tile-merge union was accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY(std::string(e.what()).find("--tile-merge union") == 0);
    }
  }
};

QTEST_GUILESS_MAIN(TilingTest)
#include "test_tiling.moc"

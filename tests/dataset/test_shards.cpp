// The parts of dataset_convert: the CRC-32C checksum (both paths), TAO's mask-extent rule
// against values skimage gave and against a slow rule on random masks, the image checks, the
// shard format read back and its corruption caught with file and record named.
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <cstring>
#include <map>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <optional>
#include <random>

#include "dataset/convert/crc32c.h"
#include "dataset/convert/mask_extent.h"
#include "dataset/convert/shard.h"
#include "dataset/image/image_check.h"
#include "dataset/mask/rle.h"
#include "tests/common/files.h"

namespace fs = std::filesystem;
using namespace mrcnn::dataset;
using mrcnn::testing::filesIn;
using mrcnn::testing::readAll;
using mrcnn::testing::writeAll;

namespace {

fs::path valImages() {
  return fs::path(qEnvironmentVariable("MRCNN_SHARED_DIR").toStdString()) /
         "data/tinycoco/images/val2017";
}

// A mask from rows of 0/1 separated by '|'.
Rle maskFromRows(const std::string& rows) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (true) {
    const size_t bar = rows.find('|', start);
    lines.push_back(rows.substr(start, bar - start));
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  cv::Mat m(static_cast<int>(lines.size()), static_cast<int>(lines[0].size()), CV_8UC1);
  for (int y = 0; y < m.rows; ++y)
    for (int x = 0; x < m.cols; ++x)
      m.at<uint8_t>(y, x) = lines[static_cast<size_t>(y)][static_cast<size_t>(x)] == '1';
  return encodeMask(m);
}

// find_contours' points are the midpoints of 4-neighbour pixels that differ: the slow,
// obvious extent to compare contourExtent with.
std::optional<ContourExtent> slowExtent(const cv::Mat& m) {
  if (m.rows < 2 || m.cols < 2) return std::nullopt;
  bool any = false;
  ContourExtent e{1e9, -1e9, 1e9, -1e9};
  const auto add = [&](double x, double y) {
    any = true;
    e.min_x = std::min(e.min_x, x);
    e.max_x = std::max(e.max_x, x);
    e.min_y = std::min(e.min_y, y);
    e.max_y = std::max(e.max_y, y);
  };
  for (int y = 0; y < m.rows; ++y) {
    for (int x = 0; x < m.cols; ++x) {
      if (x + 1 < m.cols && m.at<uint8_t>(y, x) != m.at<uint8_t>(y, x + 1)) add(x + 0.5, y);
      if (y + 1 < m.rows && m.at<uint8_t>(y, x) != m.at<uint8_t>(y + 1, x)) add(x, y + 0.5);
    }
  }
  if (!any) return std::nullopt;
  return e;
}

}  // namespace

class ShardsTest : public QObject {
  Q_OBJECT

 private slots:
  void crc32cKnownValueAndBothPaths() {
    QCOMPARE(crc32c("123456789", 9), 0xE3069283u);
    QCOMPARE(crc32cPortable("123456789", 9), 0xE3069283u);
    QCOMPARE(crc32c("", 0), 0u);
    std::mt19937 rng(3);
    std::vector<uint8_t> data(4099);
    for (auto& b : data)
      b = static_cast<uint8_t>(rng());
    for (size_t offset : {0, 1, 3, 7}) {
      for (size_t n : {0, 1, 7, 8, 9, 63, 64, 1000, 4092}) {
        QCOMPARE(crc32c(data.data() + offset, n), crc32cPortable(data.data() + offset, n));
        // Continuing over two pieces gives the CRC of the whole.
        const size_t half = n / 3;
        QCOMPARE(crc32c(data.data() + offset + half, n - half, crc32c(data.data() + offset, half)),
                 crc32c(data.data() + offset, n));
      }
    }
  }

  // TAO measures a mask with skimage's find_contours: values produced by
  // tests/dataset/convert_contours.py (scikit-image 0.26).
  void contourExtentAsSkimageMeasuresIt() {
    struct Case {
      const char* rows;
      bool has;
      double min_x, max_x, min_y, max_y;
    };
    const Case cases[] = {
        {"000000|001100|001100|000000", true, 1.5, 3.5, 0.5, 2.5},
        {"110000|110000|000000|000000", true, 0, 1.5, 0, 1.5},
        {"111111|111111|000000|000000", true, 0, 5, 1.5, 1.5},
        {"100000|100000|100000|100000", true, 0.5, 0.5, 0, 3},
        {"110000|110000|110000|110000", true, 1.5, 1.5, 0, 3},
        {"000001|000001|000011|000000", true, 3.5, 5, 0, 2.5},
        {"000000|000000|000000|111111", true, 0, 5, 2.5, 2.5},
        {"111111|111111|111111|111110", true, 4.5, 5, 2.5, 3},
        {"010010|000000|000000|010010", true, 0.5, 4.5, 0, 3},
        {"000000|000000|000000|000000", false, 0, 0, 0, 0},
        {"111111|111111|111111|111111", false, 0, 0, 0, 0},
        {"10|01", true, 0, 1, 0, 1},
        {"11|10", true, 0.5, 1, 0.5, 1},
        {"0110|1111|0110", true, 0, 3, 0, 2},
        {"000000|000000|000000", false, 0, 0, 0, 0},
        {"0000|0000|0000|0000|0000", false, 0, 0, 0, 0},
        {"00|00", false, 0, 0, 0, 0},
        {"000|000|000", false, 0, 0, 0, 0},
        {"0000000|0000000|0000000|0111111|0111111|0111111|0111111", true, 0.5, 6, 2.5, 6},
        {"0000|0000", false, 0, 0, 0, 0},
        {"00|00|00|00|00", false, 0, 0, 0, 0},
        {"000000|000000|000000", false, 0, 0, 0, 0},
        {"000000|000000|001100", true, 1.5, 3.5, 1.5, 2},
        {"000|110|110|000|000|000", true, 0, 1.5, 0.5, 2.5},
        {"000|000|000|000|000|000|000", false, 0, 0, 0, 0},
        {"00001|00000|00001", true, 3.5, 4, 0, 2},
        {"0000000|0110000|0110000", true, 0.5, 2.5, 0.5, 2},
        {"000000|111000|111000|111000|000000|000000|000000", true, 0, 2.5, 0.5, 3.5},
        {"110|111|010|011|011", true, 0, 2, 0, 4},
        {"1011011|1000001|0110011|1111110", true, 0, 6, 0, 3},
        {"1111|1111|1101|1111", true, 1.5, 2.5, 1.5, 2.5},
        {"00000|00000", false, 0, 0, 0, 0},
        {"0010111|0100100|1010001|0011001|0111001|0010110", true, 0, 6, 0, 5},
        {"0000000|0000000|0111110", true, 0.5, 5.5, 1.5, 2},
        {"000000|000000", false, 0, 0, 0, 0},
        {"000|000|001|001|001|001", true, 1.5, 2, 1.5, 5},
        {"0100|0100|0100|0100|0100|0100", true, 0.5, 1.5, 0, 5},
        {"000|000|000|000|000", false, 0, 0, 0, 0},
        {"000000|010000", true, 0.5, 1.5, 0.5, 1},
        {"010|010|001|110", true, 0, 2, 0, 3},
        {"000000|000000|000000|100100|010000|001010|100000", true, 0, 4.5, 2.5, 6},
        {"10|10|10", true, 0.5, 0.5, 0, 2},
        {"100011|011100|010000", true, 0, 5, 0, 2},
        {"1000|0100|0100|1000|0000|0001|1001", true, 0, 3, 0, 6},
    };
    for (const Case& c : cases) {
      const std::optional<ContourExtent> e = contourExtent(maskFromRows(c.rows));
      QVERIFY2(e.has_value() == c.has, c.rows);
      if (!e) continue;
      QVERIFY2(
          e->min_x == c.min_x && e->max_x == c.max_x && e->min_y == c.min_y && e->max_y == c.max_y,
          qPrintable(QString("%1: got x %2..%3 y %4..%5")
                         .arg(c.rows)
                         .arg(e->min_x)
                         .arg(e->max_x)
                         .arg(e->min_y)
                         .arg(e->max_y)));
    }
  }

  void contourExtentMatchesTheSlowRuleOnRandomMasks() {
    std::mt19937 rng(11);
    for (int t = 0; t < 3000; ++t) {
      const int h = 1 + static_cast<int>(rng() % 12), w = 1 + static_cast<int>(rng() % 12);
      cv::Mat m(h, w, CV_8UC1, cv::Scalar(0));
      const unsigned style = rng() % 3;
      if (style == 0) {
        const unsigned p = rng() % 100;
        for (int y = 0; y < h; ++y)
          for (int x = 0; x < w; ++x)
            m.at<uint8_t>(y, x) = rng() % 100 < p;
      } else {  // rectangles, often along the border
        for (unsigned k = 0; k <= style; ++k) {
          const int x0 = static_cast<int>(rng() % static_cast<unsigned>(w));
          const int y0 = static_cast<int>(rng() % static_cast<unsigned>(h));
          const int x1 = x0 + static_cast<int>(rng() % static_cast<unsigned>(w - x0 + 1));
          const int y1 = y0 + static_cast<int>(rng() % static_cast<unsigned>(h - y0 + 1));
          m(cv::Rect(x0, y0, x1 - x0, y1 - y0)).setTo(1);
        }
      }
      const auto fast = contourExtent(encodeMask(m));
      const auto slow = slowExtent(m);
      QCOMPARE(fast.has_value(), slow.has_value());
      if (!fast) continue;
      QCOMPARE(fast->min_x, slow->min_x);
      QCOMPARE(fast->max_x, slow->max_x);
      QCOMPARE(fast->min_y, slow->min_y);
      QCOMPARE(fast->max_y, slow->max_y);
    }
    QVERIFY(!maskOutsideBox(std::nullopt, {0, 0, 1, 1}));
    const ContourExtent e{9.5, 20.5, 4.5, 30.5};  // a mask on x 10..20, y 5..30
    QVERIFY(!maskOutsideBox(e, {10, 5, 11, 26}));
    QVERIFY(!maskOutsideBox(e, {10.5, 5.5, 9.5, 24.5}));  // grown by 1, it still covers
    QVERIFY(maskOutsideBox(e, {10.6, 5, 11, 26}));        // x - 1 > min_x
    QVERIFY(maskOutsideBox(e, {10, 5, 11, 24.4}));        // y + h + 1 < max_y
  }

  void imageChecks() {
    const std::string jpeg = readAll(valImages() / "000000547503.jpg");
    const std::span bytes(reinterpret_cast<const uint8_t*>(jpeg.data()), jpeg.size());
    const auto header = readImageHeader(bytes);
    QVERIFY(header);
    QCOMPARE(header->width, 500u);
    QCOMPARE(header->height, 375u);
    const ImageCheck ok = checkImage(bytes);
    QVERIFY2(ok.ok, ok.problem.c_str());
    const cv::Mat full = cv::imdecode(
        cv::Mat(1, static_cast<int>(jpeg.size()), CV_8UC1, const_cast<char*>(jpeg.data())),
        cv::IMREAD_COLOR);
    QCOMPARE(full.cols, 500);
    QCOMPARE(full.rows, 375);

    const ImageCheck cut = checkImage(bytes.first(bytes.size() / 2));
    QVERIFY(!cut.ok);
    QVERIFY2(cut.problem.find("truncated JPEG") != std::string::npos, cut.problem.c_str());
    const std::vector<uint8_t> garbage(1000, 0x5A);
    QVERIFY(!checkImage(garbage).ok);
    QVERIFY(!checkImage({}).ok);

    // Progressive and restart-interval JPEGs walk to their EOI too.
    const cv::Mat pattern(37, 53, CV_8UC3, cv::Scalar(10, 200, 30));
    for (const std::vector<int>& params : {std::vector<int>{cv::IMWRITE_JPEG_PROGRESSIVE, 1},
                                           std::vector<int>{cv::IMWRITE_JPEG_RST_INTERVAL, 2}}) {
      std::vector<uint8_t> encoded;
      cv::imencode(".jpg", pattern, encoded, params);
      const ImageCheck c = checkImage(encoded);
      QVERIFY2(c.ok, c.problem.c_str());
      QCOMPARE(c.header.width, 53u);
      QCOMPARE(c.header.height, 37u);
      QVERIFY(!checkImage(std::span(encoded).first(encoded.size() - 2)).ok);
    }

    std::vector<uint8_t> png;
    cv::imencode(".png", cv::Mat(17, 33, CV_8UC3, cv::Scalar(1, 2, 3)), png);
    const ImageCheck png_ok = checkImage(png);
    QVERIFY2(png_ok.ok, png_ok.problem.c_str());
    QCOMPARE(png_ok.header.format, ImageFormat::kPng);
    QCOMPARE(png_ok.header.width, 33u);
    QCOMPARE(png_ok.header.height, 17u);
    const ImageCheck png_cut = checkImage(std::span(png).first(png.size() - 10));
    QVERIFY(!png_cut.ok);
    QVERIFY2(png_cut.problem.find("truncated PNG") != std::string::npos, png_cut.problem.c_str());
  }

  void shardRoundTrip() {
    QTemporaryDir dir;
    const fs::path path = fs::path(dir.path().toStdString()) / shardFileName("t", 1, 3);
    QCOMPARE(path.filename().string(), std::string("t-00001-of-00003"));
    ShardInfo info{1, 3, true, {{1, "person"}, {7, "tr\xC3\xA4in"}}};
    std::vector<ShardRecord> records(3);
    for (size_t i = 0; i < records.size(); ++i) {
      ShardRecord& r = records[i];
      r.image_id = 100 + static_cast<int64_t>(i);
      r.width = 7 + static_cast<uint32_t>(i);
      r.height = 5;
      r.file_name = "img" + std::to_string(i) + ".jpg";
      r.image_bytes.assign(1000 * i + 3, static_cast<uint8_t>(i));
      for (size_t k = 0; k < i + (i == 1 ? 300 : 0); ++k) {  // record 1: many annotations
        ShardAnnotation a;
        a.id = static_cast<int64_t>(1000 * i + k);
        a.category_id = 7;
        a.label = 2;
        a.iscrowd = k % 2;
        a.bbox = {0.5, 1.25, 3, 2};
        a.area = k == 0 ? std::numeric_limits<double>::quiet_NaN() : 6.5;
        cv::Mat m(5, static_cast<int>(r.width), CV_8UC1, cv::Scalar(0));
        m(cv::Rect(0, static_cast<int>(k % 5), 3, 1)).setTo(1);
        a.mask = encodeMask(m);
        r.annotations.push_back(a);
      }
    }
    {
      ShardWriter writer(path, info);
      for (const auto& r : records)
        writer.add(r);
      QVERIFY(fs::exists(writer.temporaryPath()));
      QVERIFY(!fs::exists(path));
      writer.commit();
      QVERIFY(!fs::exists(writer.temporaryPath()));
    }
    ShardReader reader(path);
    QCOMPARE(reader.size(), records.size());
    QCOMPARE(reader.info().shard_index, 1u);
    QCOMPARE(reader.info().shard_count, 3u);
    QVERIFY(reader.info().has_masks);
    QVERIFY(reader.info().categories == info.categories);
    for (size_t i : {2, 0, 1}) {  // any order
      const ShardRecord r = reader.read(i);
      QCOMPARE(r.image_id, records[i].image_id);
      QCOMPARE(r.width, records[i].width);
      QCOMPARE(r.file_name, records[i].file_name);
      QVERIFY(r.image_bytes == records[i].image_bytes);
      QCOMPARE(r.annotations.size(), records[i].annotations.size());
      for (size_t k = 0; k < r.annotations.size(); ++k) {
        const ShardAnnotation &a = r.annotations[k], &b = records[i].annotations[k];
        QCOMPARE(a.id, b.id);
        QCOMPARE(a.iscrowd, b.iscrowd);
        QVERIFY(a.bbox == b.bbox);
        QVERIFY(std::memcmp(&a.area, &b.area, sizeof a.area) == 0);  // NaN included
        QVERIFY(a.mask == b.mask);
      }
    }
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, reader.read(3));

    // An unfinished writer leaves nothing behind; an empty shard is valid.
    const fs::path empty = path.parent_path() / "e-00000-of-00001";
    {
      ShardWriter writer(empty, {0, 1, false, {}});
      writer.add(records[1]);
    }
    QVERIFY(filesIn(path.parent_path()) == std::set<std::string>{path.filename().string()});
    {
      ShardWriter writer(empty, {0, 1, false, {}});
      writer.commit();
    }
    QCOMPARE(ShardReader(empty).size(), size_t{0});
    QVERIFY(!ShardReader(empty).info().has_masks);
  }

  void shardCorruptionIsCaughtWithFileAndRecord() {
    QTemporaryDir dir;
    const fs::path path = fs::path(dir.path().toStdString()) / "c-00000-of-00001";
    {
      ShardWriter writer(path, {0, 1, true, {{1, "a"}}});
      for (int i = 0; i < 3; ++i) {
        ShardRecord r;
        r.image_id = i;
        r.width = 4;
        r.height = 4;
        r.image_bytes.assign(500, static_cast<uint8_t>(i));
        ShardAnnotation a;
        a.mask = encodeMask(cv::Mat(4, 4, CV_8UC1, cv::Scalar(1)));
        r.annotations.push_back(a);
        writer.add(r);
      }
      writer.commit();
    }
    const std::string good = readAll(path);
    const size_t record1 = ShardReader(path).size() == 3 ? good.find(std::string(500, '\1')) : 0;
    QVERIFY(record1 != std::string::npos);

    std::string bad = good;
    bad[record1 + 250] ^= 0x10;  // a bit flipped in record 1's image bytes
    writeAll(path, bad);
    ShardReader reader(path);
    QCOMPARE(reader.read(0).image_id, int64_t{0});
    QCOMPARE(reader.read(2).image_id, int64_t{2});
    try {
      reader.read(1);
      QFAIL("a flipped byte went unnoticed");
    } catch (const ShardError& e) {
      const std::string what = e.what();
      QVERIFY2(what.find(path.string() + ": record 1 ") == 0, e.what());
      QVERIFY2(what.find("checksum mismatch") != std::string::npos, e.what());
    }

    const auto openError = [&](const std::string& bytes) {
      writeAll(path, bytes);
      try {
        ShardReader r(path);
      } catch (const ShardError& e) {
        return std::string(e.what());
      }
      return std::string();
    };
    std::string header = good;
    header[20] ^= 1;  // the shard count
    QVERIFY(openError(header).find(path.string() + ": corrupt header (checksum") == 0);
    QVERIFY(openError(good.substr(0, good.size() - 40)).find("no trailer") != std::string::npos);
    QVERIFY(openError(std::string(200, 'x')).find("bad magic") != std::string::npos);
    std::string index = good;
    index[good.size() - 32 - 8] ^= 1;  // the last record's offset
    QVERIFY(openError(index).find("corrupt index") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(ShardsTest)
#include "test_shards.moc"

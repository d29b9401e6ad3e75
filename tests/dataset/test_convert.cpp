// dataset_convert and its shard files: the checksum, TAO's mask-extent rule against values
// skimage gave, the image checks, the shard format read back and its corruption caught, a
// copy of tinycoco with planted faults converted and checked problem by problem, the clean
// val split read back mask for mask, and the task end to end through the binaries (names,
// tags, shard counts, exit codes).
#include <QCryptographicHash>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <random>
#include <set>

#include "dataset/coco/coco.h"
#include "dataset/convert/crc32c.h"
#include "dataset/convert/dataset_convert.h"
#include "dataset/convert/image_check.h"
#include "dataset/convert/mask_extent.h"
#include "dataset/convert/shard.h"
#include "dataset/rle.h"
#include "tests/common/process_run.h"
#include "tests/common/read_file.h"

namespace fs = std::filesystem;
using namespace mrcnn::dataset;

namespace {

fs::path tinycoco() {
  return fs::path(qEnvironmentVariable("MRCNN_SHARED_DIR").toStdString()) / "data/tinycoco";
}
fs::path valImages() {
  return tinycoco() / "images/val2017";
}
fs::path valJson() {
  return tinycoco() / "annotations/instances_val2017.json";
}

using mrcnn::testing::readAll;

void writeAll(const fs::path& path, std::string_view text) {
  std::ofstream(path, std::ios::binary)
      .write(text.data(), static_cast<std::streamsize>(text.size()));
}

// Every file under a folder with the SHA-256 of its bytes and its modification time.
std::map<std::string, std::string> fingerprint(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string bytes = readAll(e.path());
    out[fs::relative(e.path(), dir).string()] =
        QCryptographicHash::hash(QByteArray::fromStdString(bytes), QCryptographicHash::Sha256)
            .toHex()
            .toStdString() +
        " " + std::to_string(e.last_write_time().time_since_epoch().count());
  }
  return out;
}

std::set<std::string> filesIn(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    names.insert(e.path().filename().string());
  return names;
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

using mrcnn::testing::Run;

Run engine(const QStringList& args) {
  return mrcnn::testing::headless(args, QProcessEnvironment::systemEnvironment(), 120000);
}

QString q(const fs::path& p) {
  return QString::fromStdString(p.string());
}

// All records of a conversion, by image id, read back through ShardReader.
std::map<int64_t, ShardRecord> readShards(const std::vector<fs::path>& shards,
                                          std::vector<ShardCategory>* categories = nullptr) {
  std::map<int64_t, ShardRecord> records;
  for (const fs::path& path : shards) {
    ShardReader reader(path);
    if (categories) *categories = reader.info().categories;
    for (size_t i = 0; i < reader.size(); ++i) {
      ShardRecord r = reader.read(i);
      const int64_t id = r.image_id;
      records.emplace(id, std::move(r));
    }
  }
  return records;
}

// The planted faults, by annotation id (all but the box out of bounds in image 547503).
constexpr int64_t kOutOfBounds = 671091;      // image 471345: x moved so that x + w > 640
constexpr int64_t kZeroWidth = 84596;         // w = 0
constexpr int64_t kNegativeWidth = 95083;     // w = -5: the reader skips it
constexpr int64_t kMaskOutside = 468698;      // bbox shrunk by 5 on each side
constexpr int64_t kDegenerate = 487807;       // a second polygon of 2 points
constexpr int64_t kUnknownCategory = 541750;  // category_id 999: the reader skips it
constexpr int64_t kDuplicateOf = 665979;      // annotation 665135 renumbered to this id
constexpr int64_t kCrowdPolygon = 666164;     // iscrowd 1 with polygons

// A copy of tinycoco's val split with planted faults: image 444010 missing, 565004
// truncated, 516168 of another size in the json, 475546 garbage bytes; annotation faults
// above; a category with id 0.
fs::path makeDirtyDataset(const fs::path& root) {
  const fs::path images = root / "images";
  fs::create_directories(images);
  for (const auto& e : fs::directory_iterator(valImages())) {
    const std::string name = e.path().filename().string();
    if (name == "000000444010.jpg") continue;
    std::string bytes = readAll(e.path());
    if (name == "000000565004.jpg") bytes.resize(bytes.size() * 6 / 10);
    if (name == "000000475546.jpg") {
      std::mt19937 rng(7);
      for (char& c : bytes)
        c = static_cast<char>(rng());
    }
    writeAll(images / name, bytes);
  }
  QJsonObject doc = QJsonDocument::fromJson(QByteArray::fromStdString(readAll(valJson()))).object();
  QJsonArray cats = doc["categories"].toArray();
  cats.append(QJsonObject{{"id", 0}, {"name", "zero"}, {"supercategory", "none"}});
  doc["categories"] = cats;
  QJsonArray ims = doc["images"].toArray();
  for (qsizetype i = 0; i < ims.size(); ++i) {
    QJsonObject im = ims[i].toObject();
    if (im["id"].toInteger() == 516168) im["height"] = 490;
    ims[i] = im;
  }
  doc["images"] = ims;
  QJsonArray anns = doc["annotations"].toArray();
  for (qsizetype i = 0; i < anns.size(); ++i) {
    QJsonObject a = anns[i].toObject();
    QJsonArray bbox = a["bbox"].toArray();
    const int64_t id = a["id"].toInteger();
    if (id == kOutOfBounds) bbox[0] = 640 - bbox[2].toDouble() / 2;
    if (id == kZeroWidth) bbox[2] = 0;
    if (id == kNegativeWidth) bbox[2] = -5;
    if (id == kMaskOutside) {
      bbox = QJsonArray{bbox[0].toDouble() + 5, bbox[1].toDouble() + 5, bbox[2].toDouble() - 10,
                        bbox[3].toDouble() - 10};
    }
    if (id == kDegenerate) {
      QJsonArray seg = a["segmentation"].toArray();
      seg.append(QJsonArray{10, 10, 12, 12});
      a["segmentation"] = seg;
    }
    if (id == kUnknownCategory) a["category_id"] = 999;
    if (id == 665135) a["id"] = static_cast<qint64>(kDuplicateOf);
    if (id == kCrowdPolygon) a["iscrowd"] = 1;
    a["bbox"] = bbox;
    anns[i] = a;
  }
  doc["annotations"] = anns;
  const fs::path json = root / "dirty.json";
  writeAll(json, QJsonDocument(doc).toJson(QJsonDocument::Compact).toStdString());
  return json;
}

}  // namespace

class ConvertTest : public QObject {
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

  void plantedFaultsAreReportedOneByOne() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    const fs::path json = makeDirtyDataset(root);
    const auto inputs_before = fingerprint(root);
    const CocoDataset dataset = loadCoco(json);

    ConvertOptions options;
    options.image_dir = root / "images";
    options.annotations = json;
    options.output_dir = root / "out";
    options.num_shards = 4;
    options.threads = 2;
    const ConvertResult r = convertDataset(options);
    QCOMPARE(r.tag, std::string("dirty"));

    // Each planted fault, with its kind and ids.
    std::multiset<std::tuple<std::string, int64_t, int64_t>> found;
    for (const ConvertProblem& p : r.problems)
      found.insert({p.kind, p.image_id.value_or(-1), p.annotation_id.value_or(-1)});
    const std::multiset<std::tuple<std::string, int64_t, int64_t>> expected = {
        {"image_missing", 444010, -1},
        {"image_corrupt", 565004, -1},
        {"image_corrupt", 475546, -1},
        {"image_size_mismatch", 516168, -1},
        // Its crowd region's RLE is 480 high, the json now says 490: the reader warns, and the
        // mask cannot be stored at the image's size.
        {"rle_size_mismatch", 516168, 904600516168},
        {"bad_mask", 516168, 904600516168},
        {"box_out_of_bounds", 471345, kOutOfBounds},
        {"bad_bbox", 547503, kZeroWidth},
        {"bad_bbox", 547503, kNegativeWidth},
        {"mask_outside_box", 547503, kMaskOutside},
        {"degenerate_polygon", 547503, kDegenerate},
        {"unknown_category_id", 547503, kUnknownCategory},
        {"duplicate_annotation_id", 547503, kDuplicateOf},
        {"crowd_without_rle", 547503, kCrowdPolygon},
        {"category_ids_not_from_1", -1, -1},
    };
    QVERIFY2(found == expected, qPrintable([&] {
               QString s = "found:";
               for (const auto& [k, i, a] : found)
                 s += QString("\n  %1 %2 %3").arg(QString::fromStdString(k)).arg(i).arg(a);
               return s;
             }()));
    for (const ConvertProblem& p : r.problems) {
      if (p.kind == "image_corrupt" && p.image_id == 565004) {
        QVERIFY2(p.message.find("truncated JPEG") != std::string::npos, p.message.c_str());
        QCOMPARE(p.file, std::string("000000565004.jpg"));
      }
    }

    // TAO's warnings file, to the byte (json.dump's layout; convert_tao_reference.py gives the
    // same on this json).
    QCOMPARE(readAll(root / "out/dirty_warnings.json"),
             std::string("{\"471345\": {\"box\": [671091], \"mask\": []}, \"547503\": {\"box\": "
                         "[84596, 95083], \"mask\": [468698]}}"));
    QCOMPARE(r.warnings_path, root / "out/dirty_warnings.json");

    // The report holds the same problems, with a summary.
    const QJsonObject report =
        QJsonDocument::fromJson(QByteArray::fromStdString(readAll(root / "out/dirty_report.json")))
            .object();
    QCOMPARE(report["summary"].toObject()["image_corrupt"].toInt(), 2);
    QCOMPARE(report["summary"].toObject()["bad_bbox"].toInt(), 2);
    const QJsonArray problems = report["problems"].toArray();
    QCOMPARE(problems.size(), static_cast<qsizetype>(expected.size()));
    for (const auto& v : problems) {
      const QJsonObject p = v.toObject();
      QVERIFY(p.contains("kind") && p.contains("image_id") && p.contains("annotation_id") &&
              p.contains("file") && p.contains("message"));
      if (p["kind"] == "image_missing") QCOMPARE(p["file"].toString(), QString("000000444010.jpg"));
      if (p["kind"] == "category_ids_not_from_1") QVERIFY(p["image_id"].isNull());
    }
    const std::vector<std::string> lines = summaryLines(r);
    QVERIFY(
        std::find(lines.begin(), lines.end(),
                  "  2 images corrupt (first: 000000565004.jpg: truncated JPEG (no EOI marker))") !=
        lines.end());
    QVERIFY(std::find(lines.begin(), lines.end(), "  1 image missing (first: 000000444010.jpg)") !=
            lines.end());

    // Shards: 6 images into 4, image i in shard i % 4; only 471345 (i = 0) and 547503 (i = 4)
    // are whole, both in shard 0.
    QCOMPARE(r.shards.size(), size_t{4});
    QCOMPARE(filesIn(root / "out"),
             (std::set<std::string>{"dirty-00000-of-00004", "dirty-00001-of-00004",
                                    "dirty-00002-of-00004", "dirty-00003-of-00004",
                                    "dirty_warnings.json", "dirty_report.json"}));
    QCOMPARE(ShardReader(r.shards[0]).size(), size_t{2});
    for (size_t s = 1; s < 4; ++s)
      QCOMPARE(ShardReader(r.shards[s]).size(), size_t{0});
    std::vector<ShardCategory> categories;
    const auto records = readShards(r.shards, &categories);
    QCOMPARE(categories.size(), size_t{81});
    QCOMPARE(categories[0].id, int64_t{0});
    QCOMPARE(categories[0].name, std::string("zero"));
    QCOMPARE(records.size(), size_t{2});
    QCOMPARE(r.images_written, uint64_t{2});
    QCOMPARE(r.images_skipped, uint64_t{4});

    uint64_t annotations = 0;
    for (const auto& [id, record] : records) {
      const uint32_t index = *dataset.imageIndex(id);
      const CocoImage& image = dataset.images()[index];
      QCOMPARE(record.file_name, std::string(image.file_name));
      const std::string file = readAll(root / "images" / record.file_name);
      QVERIFY(std::equal(record.image_bytes.begin(), record.image_bytes.end(), file.begin(),
                         file.end(),
                         [](uint8_t a, char b) { return a == static_cast<uint8_t>(b); }));
      // Every annotation of the image but the skipped boxes, in file order, masks exact.
      std::vector<const CocoAnnotation*> kept;
      for (uint32_t k : dataset.annotationsOfImage(index)) {
        const CocoAnnotation& a = dataset.annotations()[k];
        if (a.id != kOutOfBounds && a.id != kZeroWidth) kept.push_back(&a);
      }
      QCOMPARE(record.annotations.size(), kept.size());
      for (size_t k = 0; k < kept.size(); ++k) {
        const ShardAnnotation& s = record.annotations[k];
        QCOMPARE(s.id, kept[k]->id);
        QCOMPARE(s.category_id, kept[k]->category_id);
        QCOMPARE(s.label, dataset.label(kept[k]->category_id));
        QCOMPARE(s.iscrowd, kept[k]->iscrowd);
        QVERIFY(s.bbox == kept[k]->bbox);
        QVERIFY(s.mask == annotationRle(dataset, *kept[k]));
      }
      annotations += kept.size();
    }
    QCOMPARE(r.annotations_written, annotations);
    QVERIFY(records.at(547503).annotations.size() == 10);  // 13 - zero, negative, unknown

    // A second conversion gives the same bytes; the inputs are untouched.
    options.output_dir = root / "again";
    options.threads = 1;
    const ConvertResult again = convertDataset(options);
    for (const char* name : {"dirty-00000-of-00004", "dirty-00001-of-00004", "dirty-00002-of-00004",
                             "dirty-00003-of-00004", "dirty_warnings.json"}) {
      QVERIFY2(readAll(root / "out" / name) == readAll(root / "again" / name), name);
    }
    auto after = fingerprint(root);
    std::erase_if(after, [](const auto& e) {
      return e.first.rfind("out/", 0) == 0 || e.first.rfind("again/", 0) == 0;
    });
    QVERIFY(after == inputs_before);

    // Without masks: the same box warnings, no mask warnings, no masks in the records.
    options.output_dir = root / "nomask";
    options.include_mask = false;
    const ConvertResult nomask = convertDataset(options);
    QCOMPARE(readAll(root / "nomask/dirty_warnings.json"),
             std::string("{\"471345\": {\"box\": [671091], \"mask\": []}, \"547503\": {\"box\": "
                         "[84596, 95083], \"mask\": []}}"));
    QVERIFY(!ShardReader(nomask.shards[0]).info().has_masks);
    for (const auto& [id, record] : readShards(nomask.shards)) {
      for (const ShardAnnotation& a : record.annotations)
        QVERIFY(a.mask.counts.empty() && a.mask.h == 0);
    }
  }

  void cleanValSplitComesBackWhole() {
    QTemporaryDir dir;
    const fs::path out = fs::path(dir.path().toStdString()) / "new/sub";  // created
    ConvertOptions options;
    options.image_dir = valImages();
    options.annotations = valJson();
    options.output_dir = out;
    const ConvertResult r = convertDataset(options);
    const CocoDataset dataset = loadCoco(valJson());
    QCOMPARE(dataset.images().size(), size_t{6});
    QCOMPARE(dataset.annotations().size(), size_t{136});
    QCOMPARE(r.shards.size(), size_t{6});  // 256 capped at the image count
    QCOMPARE(r.shards[0].filename().string(), std::string("instances_val2017-00000-of-00006"));
    QCOMPARE(r.images_written, uint64_t{6});

    // TAO's rules find nothing in tinycoco (tests/dataset/convert_tao_reference.py agrees):
    // no warnings file, an empty report.
    QVERIFY(r.tao_warnings.empty());
    QVERIFY(r.problems.empty());
    QVERIFY(r.warnings_path.empty());
    QVERIFY(!fs::exists(out / "instances_val2017_warnings.json"));
    QCOMPARE(readAll(out / "instances_val2017_report.json"),
             std::string("{\"summary\":{},\"problems\":[]}\n"));

    // What TAO would skip (its box rule) is all that is missing.
    std::set<int64_t> tao_box;
    for (const auto& [image, w] : r.tao_warnings)
      tao_box.insert(w.box.begin(), w.box.end());
    const auto records = readShards(r.shards);
    QCOMPARE(records.size(), size_t{6});
    uint64_t annotations = 0;
    for (const auto& [id, record] : records) {
      const uint32_t index = *dataset.imageIndex(id);
      const std::string file = readAll(valImages() / record.file_name);
      QVERIFY(record.image_bytes.size() == file.size() &&
              std::memcmp(record.image_bytes.data(), file.data(), file.size()) == 0);
      size_t k = 0;
      for (uint32_t a_index : dataset.annotationsOfImage(index)) {
        const CocoAnnotation& a = dataset.annotations()[a_index];
        if (tao_box.count(a.id)) continue;
        QVERIFY(k < record.annotations.size());
        QCOMPARE(record.annotations[k].id, a.id);
        QVERIFY(record.annotations[k].mask == annotationRle(dataset, a));
        ++k;
      }
      QCOMPARE(k, record.annotations.size());
      annotations += k;
    }
    QCOMPARE(annotations + tao_box.size(), uint64_t{136});
    QCOMPARE(r.annotations_written, annotations);
    // Shard i holds image i (6 shards for 6 images).
    for (size_t s = 0; s < 6; ++s) {
      ShardReader reader(r.shards[s]);
      QCOMPARE(reader.size(), size_t{1});
      QCOMPARE(reader.read(0).image_id, dataset.images()[s].id);
    }
  }

  void endToEndThroughTheBinaries() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    const fs::path out = root / "out";
    fs::create_directories(out);
    writeAll(out / "keep.txt", "not ours");

    // Defaults: the tag from the annotation file, 256 shards capped at 6.
    Run r = engine({"--task", "dataset_convert", "--image-dir", q(valImages()), "--annotations",
                    q(valJson()), "--output-dir", q(out)});
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    QVERIFY2(r.out.contains("shards: 6 "), qPrintable(r.out));
    QVERIFY2(r.out.contains("written: 6 images"), qPrintable(r.out));
    QVERIFY2(r.out.contains("done in "), qPrintable(r.out));
    std::set<std::string> names = filesIn(out);
    QVERIFY(names.count("instances_val2017-00005-of-00006"));
    QVERIFY(names.count("instances_val2017_report.json"));
    QVERIFY(names.count("keep.txt"));

    // --tag and --num-shards; then the same tag with fewer shards replaces the old set.
    r = engine({"--task", "dataset_convert", "--image-dir", q(valImages()), "--annotations",
                q(valJson()), "--output-dir", q(out), "--tag", "val", "--num-shards", "4",
                "--include-mask", "false"});
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    r = engine({"--task", "dataset_convert", "--image-dir", q(valImages()), "--annotations",
                q(valJson()), "--output-dir", q(out), "--tag", "val", "--num-shards=2"});
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    QVERIFY2(r.out.contains("removed the stale"), qPrintable(r.out));
    names = filesIn(out);
    QVERIFY(names.count("val-00000-of-00002") && names.count("val-00001-of-00002"));
    QVERIFY(!names.count("val-00000-of-00004"));
    QVERIFY(names.count("instances_val2017-00000-of-00006"));  // another tag: untouched
    QCOMPARE(readAll(out / "keep.txt"), std::string("not ours"));
    for (const auto& n : names)
      QVERIFY2(n.find(".tmp") == std::string::npos, n.c_str());

    // The planted faults: the terminal summary.
    const fs::path json = makeDirtyDataset(root / "dirty");
    r = engine({"--task", "dataset_convert", "--image-dir", q(root / "dirty/images"),
                "--annotations", q(json), "--output-dir", q(out)});
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    QVERIFY2(r.out.contains("  1 image missing (first: 000000444010.jpg)"), qPrintable(r.out));
    QVERIFY2(r.out.contains(
                 "  2 images corrupt (first: 000000565004.jpg: truncated JPEG (no EOI marker))"),
             qPrintable(r.out));
    QVERIFY2(r.out.contains("  1 mask outside its box (TAO mask warning, kept)"),
             qPrintable(r.out));
    QVERIFY2(r.out.contains("left out: 4 images"), qPrintable(r.out));
    QVERIFY2(r.out.contains("dirty_warnings.json (2 images)"), qPrintable(r.out));

    // The same tag without warnings: the old warnings file goes (TAO writes none then).
    QVERIFY(fs::exists(out / "dirty_warnings.json"));
    r = engine({"--task", "dataset_convert", "--image-dir", q(valImages()), "--annotations",
                q(valJson()), "--output-dir", q(out), "--tag", "dirty"});
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    QVERIFY2(r.out.contains("TAO warnings: none, so no dirty_warnings.json was written"),
             qPrintable(r.out));
    QVERIFY2(r.out.contains("removed the stale " + q(out / "dirty_warnings.json")),
             qPrintable(r.out));
    QVERIFY(!fs::exists(out / "dirty_warnings.json"));

    // Bad command lines: exit 2 with the reason.
    const QStringList base = {"--task",        "dataset_convert", "--image-dir",  q(valImages()),
                              "--annotations", q(valJson()),      "--output-dir", q(out)};
    r = engine({"--task", "dataset_convert", "--image-dir", q(valImages())});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("dataset_convert needs --annotations, --output-dir"),
             qPrintable(r.err));
    r = engine(base + QStringList{"--num-shards", "0"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--num-shards must be a whole number of at least 1, got \"0\""),
             qPrintable(r.err));
    r = engine(base + QStringList{"--num-shards", "many"});
    QCOMPARE(r.code, 2);
    r = engine(base + QStringList{"--include-mask", "maybe"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--include-mask must be true or false, got \"maybe\""),
             qPrintable(r.err));
    r = engine(base + QStringList{"--shards", "3"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("unknown argument \"--shards\""), qPrintable(r.err));

    // Unusable inputs: exit 4 naming the file.
    r = engine({"--task", "dataset_convert", "--image-dir", q(valImages()), "--annotations",
                q(root / "nope.json"), "--output-dir", q(out)});
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains(q(root / "nope.json")), qPrintable(r.err));
    writeAll(root / "broken.json", "{\"images\": [{\"id\": 1, \"width\": \"x\"}]}");
    r = engine({"--task", "dataset_convert", "--image-dir", q(valImages()), "--annotations",
                q(root / "broken.json"), "--output-dir", q(out)});
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains("broken.json: byte ") && r.err.contains("images[0].width"),
             qPrintable(r.err));
    r = engine({"--task", "dataset_convert", "--image-dir", q(root / "no-images"), "--annotations",
                q(valJson()), "--output-dir", q(out)});
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains("image folder " + q(root / "no-images") + " does not exist"),
             qPrintable(r.err));
    r = engine({"--task", "dataset_convert", "--image-dir", q(valImages()), "--annotations",
                q(valJson()), "--output-dir", q(out / "keep.txt/sub")});
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains("cannot create the output folder"), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(ConvertTest)
#include "test_convert.moc"

// The mask API (dataset/rle.h) against pycocotools, live: every annotation of tinycoco and
// thousands of seeded random cases (masks, RLE strings, polygons, boxes, uncompressed RLEs,
// merges, mask and box IoU matrices) are written with our results to a json that
// mask_api_check.py recomputes with pycocotools and compares exactly. Small cases with
// known answers and the malformed inputs pycocotools cannot take (it would crash or read
// out of bounds) are checked here. benchmarkIou times iou() against maskUtils.iou.
#include <simdjson.h>

#include <QElapsedTimer>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>

#include "dataset/json_writer.h"
#include "dataset/rle.h"

namespace fs = std::filesystem;
using namespace mrcnn::dataset;

namespace {

class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  // 0 .. n-1 (0 when n <= 0).
  int pick(int n) { return n <= 0 ? 0 : static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  }
  bool chance(double p) { return uniform(0, 1) < p; }

 private:
  std::mt19937_64 rng_;
};

// ---- Writing cases ----

void writeRle(JsonWriter& json, const Rle& rle) {
  json.beginObject().key("size").beginArray().value(rle.h).value(rle.w).endArray();
  json.key("counts").value(toCompressedString(rle)).endObject();
}

void writeBox(JsonWriter& json, const Box& box) {
  json.beginArray();
  for (double v : box)
    json.value(v);
  json.endArray();
}

void writeMatrix(JsonWriter& json, const IouMatrix& m) {
  json.beginArray();
  for (size_t d = 0; d < m.rows && m.cols > 0; ++d) {
    json.beginArray();
    for (size_t g = 0; g < m.cols; ++g)
      json.value(m.at(d, g));
    json.endArray();
  }
  json.endArray();
}

// area, bbox of one mask: the members every case carries.
void writeAreaAndBox(JsonWriter& json, const Rle& rle) {
  json.key("area").value(area(rle)).key("bbox");
  writeBox(json, toBbox(rle));
}

// ---- Random inputs ----

// A mask of one of several kinds: noise, rectangles, ellipses, empty, full, thin lines.
cv::Mat randomMask(Random& r, int h, int w) {
  cv::Mat m(h, w, CV_8UC1, cv::Scalar(0));
  if (h == 0 || w == 0) return m;
  switch (r.pick(7)) {
    case 0: {
      const double p = r.uniform(0, 1);
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x)
          m.at<uint8_t>(y, x) = r.chance(p);
      }
      break;
    }
    case 1:
      for (int i = 1 + r.pick(4); i > 0; --i) {
        const int x = r.pick(w), y = r.pick(h);
        m(cv::Rect(x, y, 1 + r.pick(w - x), 1 + r.pick(h - y))).setTo(1);
      }
      break;
    case 2:
      for (int i = 1 + r.pick(3); i > 0; --i) {
        cv::ellipse(m, cv::Point(r.pick(w), r.pick(h)),
                    cv::Size(1 + r.pick(w / 2 + 1), 1 + r.pick(h / 2 + 1)), r.uniform(0, 180), 0,
                    360, cv::Scalar(1), cv::FILLED);
      }
      break;
    case 3:
      break;  // empty
    case 4:
      m.setTo(1);
      break;
    case 5:
      m.at<uint8_t>(r.pick(h), r.pick(w)) = 1;
      break;
    default:
      if (r.chance(0.5)) {
        m.col(r.pick(w)).setTo(1);
      } else {
        m.row(r.pick(h)).setTo(1);
      }
  }
  return m;
}

int randomSide(Random& r, int small, int large) {
  if (r.chance(0.03)) return 0;
  return r.chance(0.1) ? 1 + r.pick(large) : 1 + r.pick(small);
}

// The same mask with zero-length runs put inside (a run split in two around a 0, or a
// "0, 0" pair inserted): valid input that pycocotools walks in its own way.
Rle withZeroRuns(Random& r, Rle rle) {
  for (int k = r.pick(3); k > 0 && !rle.counts.empty(); --k) {
    const size_t i = static_cast<size_t>(r.pick(static_cast<int>(rle.counts.size())));
    const uint32_t c = rle.counts[i];
    const uint32_t first = c == 0 ? 0 : static_cast<uint32_t>(r.pick(static_cast<int>(c) + 1));
    if (r.chance(0.5)) {
      rle.counts[i] = first;
      rle.counts.insert(rle.counts.begin() + static_cast<std::ptrdiff_t>(i) + 1, {0, c - first});
    } else {
      rle.counts.insert(rle.counts.begin() + static_cast<std::ptrdiff_t>(i) + 1, {0, 0});
    }
  }
  return rle;
}

// A random compressed string built character by character: numbers of 1 to 6 characters
// of either sign and 7-character positive ones (which pycocotools also decodes exactly,
// see fromCompressedString), so runs may be huge, wrap, and not add up to h * w.
std::string randomCountsString(Random& r) {
  std::string s;
  for (int n = r.pick(r.chance(0.2) ? 60 : 12); n > 0; --n) {
    const int length = r.chance(0.05) ? 7 : 1 + (r.chance(0.7) ? r.pick(2) : r.pick(6));
    for (int k = 0; k < length; ++k) {
      int c = r.pick(32);
      if (k + 1 < length) {
        c |= 0x20;
      } else if (length == 7) {
        c &= 0x0f;
      }
      s.push_back(static_cast<char>(48 + c));
    }
  }
  return s;
}

// Polygon lists meant to hit the rasteriser's and frPyObjects' corners: points off the
// image, fewer than 3 points, odd lengths, collinear and repeated points, 4-number first
// lists (the box pitfall), empty lists.
std::vector<Polygon> randomPolygonList(Random& r, int h, int w) {
  std::vector<Polygon> lists;
  // On a 0-wide image pycocotools' merge of several polygons overflows its buffer: one only.
  const int parts = w == 0 && h > 0 ? 1 : (r.chance(0.3) ? 2 + r.pick(4) : 1);
  for (int p = 0; p < parts; ++p) {
    int points = 3 + r.pick(r.chance(0.2) ? 30 : 6);
    if (r.chance(0.15)) points = r.pick(3);  // 0, 1 or 2 points
    const double cx = r.uniform(-0.3, 1.3) * w, cy = r.uniform(-0.3, 1.3) * h;
    const double size = r.uniform(0.5, 1.5) * std::max(1, std::max(w, h)) / 2;
    const int kind = r.pick(6);
    Polygon xy;
    for (int i = 0; i < points; ++i) {
      double x = 0, y = 0;
      switch (kind) {
        case 0:
          x = r.uniform(-5, w + 5.0);
          y = r.uniform(-5, h + 5.0);
          break;
        case 1:
          x = (r.pick(10 * w + 40) - 20) / 10.0;  // the 0.1 grid, where 5x + .5 is tight
          y = (r.pick(10 * h + 40) - 20) / 10.0;
          break;
        case 2:
          x = cx + i * size / 4;  // collinear: zero area
          y = cy + i * size / 7;
          break;
        case 3:
          x = xy.size() >= 2 && r.chance(0.5) ? xy[xy.size() - 2] : r.uniform(-2, w + 2.0);
          y = xy.size() >= 2 && r.chance(0.5) ? xy[xy.size() - 1] : r.uniform(-2, h + 2.0);
          break;
        case 4:
          x = cx + r.uniform(0, 0.9);  // sub-pixel
          y = cy + r.uniform(0, 0.9);
          break;
        default: {
          const double a = 6.283185307179586 * i / points, rad = size * r.uniform(0.3, 1);
          x = cx + rad * std::cos(a);
          y = cy + rad * std::sin(a);
        }
      }
      xy.push_back(x);
      xy.push_back(y);
    }
    if (r.chance(0.05) && !xy.empty()) xy.push_back(r.uniform(0, w));  // odd length
    lists.push_back(std::move(xy));
  }
  return lists;
}

Box randomBox(Random& r, double scale) {
  auto coordinate = [&] { return r.chance(0.3) ? r.pick(20) - 4.0 : r.uniform(-0.2, 1.2) * scale; };
  auto extent = [&]() -> double {
    switch (r.pick(8)) {
      case 0:
        return 0;
      case 1:
        return -r.uniform(0, scale / 4);
      case 2:
        return r.uniform(0, 1e-6);
      case 3:
        return r.uniform(0, 1e9);
      case 4:
        return 1 + r.pick(5);
      default:
        return r.uniform(0, scale / 2);
    }
  };
  return {coordinate(), coordinate(), extent(), extent()};
}

// ---- tinycoco ----

double number(simdjson::dom::element e) {
  if (e.is_int64()) return static_cast<double>(int64_t(e));
  if (e.is_uint64()) return static_cast<double>(uint64_t(e));
  return double(e);
}

struct Annotation {
  int64_t id = 0;
  uint8_t iscrowd = 0;
  Box bbox{};
  Rle rle;
};

// What COCO.annToRLE makes of every annotation, by image in file order.
std::map<int64_t, std::vector<Annotation>> readTinycoco(const fs::path& file) {
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parser.load(file.string());
  std::map<int64_t, std::pair<uint32_t, uint32_t>> sizes;
  for (simdjson::dom::element im : doc["images"].get_array()) {
    sizes[im["id"].get_int64()] = {static_cast<uint32_t>(im["height"].get_int64()),
                                   static_cast<uint32_t>(im["width"].get_int64())};
  }
  std::map<int64_t, std::vector<Annotation>> byImage;
  for (simdjson::dom::element a : doc["annotations"].get_array()) {
    Annotation ann;
    ann.id = a["id"].get_int64();
    ann.iscrowd = static_cast<uint8_t>(a["iscrowd"].get_int64());
    simdjson::dom::array bbox = a["bbox"].get_array();
    for (size_t i = 0; i < 4; ++i)
      ann.bbox[i] = number(bbox.at(i));
    const auto [h, w] = sizes.at(a["image_id"].get_int64());
    const simdjson::dom::element seg = a["segmentation"];
    if (seg.is_array()) {
      std::vector<Polygon> lists;
      for (simdjson::dom::element poly : seg.get_array()) {
        Polygon xy;
        for (simdjson::dom::element v : poly.get_array())
          xy.push_back(number(v));
        lists.push_back(std::move(xy));
      }
      ann.rle = rleFromSegmentationList(lists, h, w);
    } else {
      simdjson::dom::array size = seg["size"].get_array();
      const auto sh = static_cast<uint32_t>(size.at(0).get_int64());
      const auto sw = static_cast<uint32_t>(size.at(1).get_int64());
      if (seg["counts"].is_string()) {
        ann.rle = fromCompressedString(std::string_view(seg["counts"]), sh, sw);
      } else {
        std::vector<int64_t> counts;
        for (simdjson::dom::element c : seg["counts"].get_array())
          counts.push_back(c.get_int64());
        ann.rle = rleFromUncompressed(counts, sh, sw);
      }
    }
    byImage[a["image_id"].get_int64()].push_back(std::move(ann));
  }
  return byImage;
}

// ---- Running the oracle ----

// Runs a script of ours with MRCNN_PYTHON; returns its output, or fails the test.
bool runPython(const QString& scriptName, const QStringList& args, QString& output,
               int timeoutMs = 300000) {
  const QString python = qEnvironmentVariable("MRCNN_PYTHON");
  const QString script = qEnvironmentVariable("MRCNN_SOURCE_DIR") + "/tests/dataset/" + scriptName;
  if (!QFileInfo::exists(python) || !QFileInfo::exists(script)) {
    output = "missing " + python + " or " + script + " (run scripts/setup.sh)";
    return false;
  }
  QProcess process;
  process.setProcessChannelMode(QProcess::MergedChannels);
  process.start(python, QStringList{script} + args);
  if (!process.waitForFinished(timeoutMs)) {
    process.kill();
    process.waitForFinished();
    output = scriptName + " timed out";
    return false;
  }
  output = QString::fromUtf8(process.readAll());
  return process.exitStatus() == QProcess::NormalExit && process.exitCode() == 0;
}

struct Counts {
  int masks = 0, strings = 0, polygons = 0, boxes = 0, uncompressed = 0, merges = 0;
  int maskIous = 0, boxIous = 0;
};

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

class TestMaskApi : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    if (qEnvironmentVariableIsSet("MRCNN_KEEP_TEST_FILES")) {
      dir_.setAutoRemove(false);
      qInfo("keeping the json files in %s", qPrintable(dir_.path()));
    }
    python_ = qEnvironmentVariable("MRCNN_PYTHON");
  }

  // pycocotools' answers for small cases, computed with 2.0.11 (the parity tests below ask
  // it live; these name the rules).
  void crowdRuleAndEmptyMasks() {
    const Rle full = encodeMask(cv::Mat(3, 4, CV_8UC1, cv::Scalar(1)));
    const Rle empty{3, 4, {12}};
    cv::Mat corner(3, 4, CV_8UC1, cv::Scalar(0));
    corner(cv::Rect(0, 0, 2, 2)).setTo(1);
    const std::vector<Rle> dt = {full, empty, encodeMask(corner)};
    const std::vector<Rle> gt = {full, empty};
    const std::vector<uint8_t> crowd = {1, 0};
    const IouMatrix m = iou(dt, gt, crowd);
    QCOMPARE(m.rows, size_t{3});
    QCOMPARE(m.cols, size_t{2});
    QCOMPARE(m.at(0, 0), 1.0);
    QCOMPARE(m.at(0, 1), 0.0);  // empty ground truth
    QCOMPARE(m.at(1, 0), 0.0);  // empty detection, even against a crowd
    QCOMPARE(m.at(2, 0), 1.0);  // crowd: intersection / area(dt) = 4 / 4
    const std::vector<uint8_t> noCrowd = {0, 0};
    QCOMPARE(iou(dt, gt, noCrowd).at(2, 0), 4.0 / 12.0);
    // Masks of different sizes whose boxes overlap: -1; crowd flags other than 1 count.
    const std::vector<Rle> other = {encodeMask(cv::Mat(4, 3, CV_8UC1, cv::Scalar(1)))};
    const std::vector<uint8_t> seven = {7};
    QCOMPARE(iou(std::span(dt).first(1), other, seven).at(0, 0), -1.0);
    QVERIFY(iou(std::span(dt).first(0), gt, crowd).values.empty());
  }

  void boxIouRules() {
    const std::vector<Box> dt = {{0, 0, 2, 2}, {1, 1, 0, 3}};
    const std::vector<Box> gt = {{0, 0, 2, 2}, {1, 1, 2, 2}};
    const std::vector<uint8_t> crowd = {1, 0};
    const IouMatrix m = iou(dt, gt, crowd);
    QCOMPARE(m.values, (std::vector<double>{1.0, 0.14285714285714285, 0.0, 0.0}));
    // Touching edges overlap by zero; a crowd divides by the detection's area.
    const std::vector<Box> touching = {{2, 0, 2, 2}};
    const std::vector<uint8_t> none = {0};
    QCOMPARE(iou(std::span(dt).first(1), touching, none).at(0, 0), 0.0);
    const std::vector<Box> inside = {{0.5, 0.5, 1, 1}}, big = {{0, 0, 4, 4}};
    const std::vector<uint8_t> yes = {1};
    QCOMPARE(iou(inside, big, yes).at(0, 0), 1.0);
    QCOMPARE(iou(inside, big, none).at(0, 0), 1.0 / 16.0);
    // NaN passes fmin/fmax the way it does in C: pycocotools gives nan here too.
    const std::vector<Box> nanBox = {{0, 0, NAN, 1}}, unit = {{0, 0, 1, 1}};
    QVERIFY(std::isnan(iou(nanBox, unit, none).at(0, 0)));
    const std::vector<uint8_t> tooMany = {0, 0};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, iou(dt, gt, none));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, iou(dt, touching, tooMany));
  }

  // pycocotools walks zero-length runs one step at a time and stops when both masks run
  // out at once: the same 3-pixel mask with a "0" inside scores 0 against itself.
  void zeroLengthRunsWalkedLikePycocotools() {
    const Rle odd{8, 1, {2, 0, 2, 3, 1}}, plain{8, 1, {4, 3, 1}};
    const std::vector<Rle> a = {odd}, b = {plain};
    const std::vector<uint8_t> none = {0}, yes = {1};
    QCOMPARE(iou(a, a, none).at(0, 0), 0.0);
    QCOMPARE(iou(a, b, none).at(0, 0), 1.0);
    QCOMPARE(iou(b, a, yes).at(0, 0), 1.0);
    // Our merge makes it canonical (pycocotools would return [2] here, a truncated mask).
    QVERIFY(merge(std::vector<Rle>{odd, odd}) == plain);
  }

  void incompleteMasksAreRejected() {
    const std::vector<Rle> bad = {Rle{3, 3, {4, 4}}}, good = {Rle{3, 3, {4, 4, 1}}};
    const std::vector<uint8_t> none = {0};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, iou(bad, good, none));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, iou(good, bad, none));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, decodeColumnMajor(bad[0]));
    QCOMPARE(iou(good, good, none).at(0, 0), 1.0);
  }

  void frPyObjectsDispatch() {
    // Known strings from pycocotools 2.0.11 (frPyObjects on an N x 4 array).
    QCOMPARE(toCompressedString(rleFromBbox({0, 0, 2, 2}, 4, 4)), std::string("02208"));
    QCOMPARE(toCompressedString(rleFromBbox({1, 1, 0, 0}, 4, 4)), std::string("`0"));
    QCOMPARE(toCompressedString(rleFromBbox({-1, -1, 9, 9}, 4, 4)), std::string("0`0"));
    QCOMPARE(toCompressedString(rleFromBbox({0.5, 0.5, 2, 2}, 4, 4)), std::string("52203"));
    QCOMPARE(rlesFromBboxes(std::vector<Box>{{0, 0, 2, 2}, {1, 1, 0, 0}}, 4, 4).size(), size_t{2});
    // First list of 4 numbers: boxes for pycocotools, which then fails; fewer: fails too.
    const std::vector<Polygon> twoPoints = {{0, 0, 3, 3}, {0, 0, 3, 0, 3, 3}};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rlesFromSegmentationList(twoPoints, 4, 4));
    const std::vector<Polygon> onePoint = {{1, 2}};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rlesFromSegmentationList(onePoint, 4, 4));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rlesFromSegmentationList({}, 4, 4));
    // After a real first polygon, short lists are polygons with nothing inside.
    const std::vector<Polygon> mixed = {{1, 2, 3, 4, 5, 6}, {1, 2, 3, 4}, {}, {1}};
    const std::vector<Rle> rles = rlesFromSegmentationList(mixed, 4, 4);
    QCOMPARE(rles.size(), size_t{4});
    for (const Rle& r : rles)
      QCOMPARE(toCompressedString(r), std::string("`0"));
    // Uncompressed RLE: the object's own size; numpy's uint32 range.
    const std::vector<int64_t> counts = {1, 3};
    QVERIFY(rleFromUncompressed(counts, 2, 2) == (Rle{2, 2, {1, 3}}));
    const std::vector<int64_t> negative = {-1}, huge = {int64_t{1} << 32};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rleFromUncompressed(negative, 2, 2));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rleFromUncompressed(huge, 2, 2));
  }

  // Any byte string either decodes or throws std::invalid_argument; nothing else happens
  // (pycocotools would read past a truncated string's end).
  void malformedStringsThrow() {
    Random r(99);
    int threw = 0, decoded = 0;
    for (int i = 0; i < 20000; ++i) {
      std::string s;
      const int n = r.pick(20);
      for (int k = 0; k < n; ++k) {
        s.push_back(r.chance(0.9) ? static_cast<char>(48 + r.pick(64))
                                  : static_cast<char>(r.pick(256)));
      }
      try {
        const Rle rle = fromCompressedString(s, static_cast<uint32_t>(r.pick(5)),
                                             static_cast<uint32_t>(r.pick(5)));
        ++decoded;
        try {
          decodeMask(rle);
        } catch (const std::invalid_argument&) {
        }
      } catch (const std::invalid_argument& e) {
        QVERIFY(std::string(e.what()).find("RLE counts string") != std::string::npos);
        ++threw;
      }
    }
    QVERIFY(threw > 1000 && decoded > 1000);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, fromCompressedString("1oooooooooooo?", 3, 3));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, fromCompressedString("12P", 3, 3));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, fromCompressedString("1 2", 3, 3));
  }

  void tinycocoAgreesWithPycocotools() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set (run through ctest)");
    const fs::path root =
        fs::path(qEnvironmentVariable("MRCNN_SHARED_DIR").toStdString()) / "data" / "tinycoco";
    const fs::path cppJson = fs::path(dir_.path().toStdString()) / "tinycoco_cpp.json";
    int annotations = 0, images = 0, pairs = 0;
    {
      std::ofstream out(cppJson);
      JsonWriter json(out);
      json.beginObject();
      for (const char* split : {"train2017", "val2017"}) {
        const fs::path file = root / "annotations" / ("instances_" + std::string(split) + ".json");
        QVERIFY2(fs::is_regular_file(file), file.c_str());
        json.key(split).beginObject().key("file").value(file.string());
        json.key("images").beginArray();
        for (const auto& [imageId, anns] : readTinycoco(file)) {
          std::vector<Rle> rles;
          std::vector<Box> boxes;
          std::vector<uint8_t> crowd;
          json.beginObject().key("image_id").value(imageId).key("annotations").beginArray();
          for (const Annotation& a : anns) {
            json.beginObject().key("id").value(a.id).key("counts").value(toCompressedString(a.rle));
            writeAreaAndBox(json, a.rle);
            json.endObject();
            rles.push_back(a.rle);
            boxes.push_back(a.bbox);
            crowd.push_back(a.iscrowd);
          }
          json.endArray().key("segm_iou");
          writeMatrix(json, iou(rles, rles, crowd));
          json.key("bbox_iou");
          writeMatrix(json, iou(boxes, boxes, crowd));
          json.endObject();
          annotations += static_cast<int>(anns.size());
          pairs += static_cast<int>(anns.size() * anns.size());
          ++images;
        }
        json.endArray().endObject();
      }
      json.endObject();
      QVERIFY(json.complete());
    }
    QString output;
    const bool ok =
        runPython("mask_api_check.py", {"tinycoco", QString::fromStdString(cppJson)}, output);
    const auto match = QRegularExpression(
                           "RESULT tinycoco annotations=(\\d+) images=(\\d+) "
                           "pairs=(\\d+) failures=0")
                           .match(output);
    QVERIFY2(ok && match.hasMatch(), qPrintable(output.right(6000)));
    qInfo("%s", qPrintable(match.captured(0)));
    QCOMPARE(match.captured(1).toInt(), annotations);
    QCOMPARE(match.captured(2).toInt(), images);
    QCOMPARE(match.captured(3).toInt(), pairs);
    QVERIFY(annotations > 300);
  }

  void randomCasesAgreeWithPycocotools() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set (run through ctest)");
    const fs::path cppJson = fs::path(dir_.path().toStdString()) / "random_cpp.json";
    Counts n;
    QElapsedTimer timer;
    timer.start();
    {
      std::ofstream out(cppJson);
      JsonWriter json(out);
      json.beginObject();
      writeMasks(json, 3000, n);
      if (QTest::currentTestFailed()) return;
      writeStrings(json, 3000, n);
      writePolygons(json, 3000, n);
      writeBoxMasks(json, 1000, n);
      writeUncompressed(json, 1000, n);
      writeMerges(json, 2000, n);
      writeMaskIous(json, 1500, n);
      writeBoxIous(json, 1500, n);
      json.endObject();
      QVERIFY(json.complete());
    }
    qInfo("C++ side: %lld ms", static_cast<long long>(timer.elapsed()));
    timer.restart();
    QString output;
    const bool ok =
        runPython("mask_api_check.py", {"random", QString::fromStdString(cppJson)}, output);
    qInfo("pycocotools side: %lld ms", static_cast<long long>(timer.elapsed()));
    const auto match = QRegularExpression(
                           "RESULT random masks=(\\d+) strings=(\\d+) polygons=(\\d+) "
                           "boxes=(\\d+) uncompressed=(\\d+) merges=(\\d+) mask_ious=(\\d+) "
                           "box_ious=(\\d+) pairs=(\\d+) failures=0")
                           .match(output);
    QVERIFY2(ok && match.hasMatch(), qPrintable(output.right(6000)));
    qInfo("%s", qPrintable(match.captured(0)));
    const int expected[] = {n.masks,        n.strings, n.polygons, n.boxes,
                            n.uncompressed, n.merges,  n.maskIous, n.boxIous};
    for (int i = 0; i < 8; ++i)
      QCOMPARE(match.captured(i + 1).toInt(), expected[i]);
  }

  // iou() against maskUtils.iou on COCO-like data (480x640 images, star-shaped objects,
  // detections near them, one crowd ground truth per call), timed in the same run; both
  // sides' matrices must be equal. Two shapes of call: the benchmark's 100 detections x 20
  // ground truths per image, and COCOeval's usual call per (image, category), 15 x 7.
  // 100 and 500 calls by default; MRCNN_BENCH_IMAGES=1000 scales both by 10.
  void benchmarkIou() {
    if (python_.isEmpty()) QSKIP("MRCNN_PYTHON is not set (run through ctest)");
    const int scale = qEnvironmentVariableIsSet("MRCNN_BENCH_IMAGES")
                          ? qEnvironmentVariableIntValue("MRCNN_BENCH_IMAGES") / 100
                          : 1;
    benchmark(100 * std::max(scale, 1), /*dts=*/100, /*gts=*/20);
    if (QTest::currentTestFailed()) return;
    benchmark(500 * std::max(scale, 1), /*dts=*/15, /*gts=*/7);
  }

 private:
  void benchmark(int calls, int kDts, int kGts) {
    constexpr uint32_t kH = 480, kW = 640;
    struct Call {
      std::vector<std::string> dt, gt;
      std::vector<Box> dtBoxes, gtBoxes;
      std::vector<uint8_t> crowd;
    };
    std::vector<Call> data(static_cast<size_t>(calls));
    Random r(2024);
    for (Call& im : data) {
      std::vector<Polygon> shapes;
      for (int g = 0; g < kGts; ++g) {
        const double cx = r.uniform(0, kW), cy = r.uniform(0, kH), size = r.uniform(8, 150);
        Polygon xy;
        const int points = 8 + r.pick(24);
        for (int i = 0; i < points; ++i) {
          const double a = 6.283185307179586 * i / points, rad = size * r.uniform(0.5, 1);
          xy.push_back(cx + rad * std::cos(a));
          xy.push_back(cy + rad * std::sin(a));
        }
        shapes.push_back(xy);
        const Rle rle = rleFromPolygon(xy, kH, kW);
        im.gt.push_back(toCompressedString(rle));
        im.gtBoxes.push_back(toBbox(rle));
        im.crowd.push_back(g == 0);
      }
      for (int d = 0; d < kDts; ++d) {
        Polygon xy = shapes[static_cast<size_t>(r.pick(kGts))];
        const double dx = r.uniform(-20, 20), dy = r.uniform(-20, 20), s = r.uniform(0.7, 1.3);
        for (size_t i = 0; i < xy.size(); i += 2) {
          xy[i] = xy[0] + (xy[i] - xy[0]) * s + dx + r.uniform(-3, 3);
          xy[i + 1] = xy[1] + (xy[i + 1] - xy[1]) * s + dy + r.uniform(-3, 3);
        }
        const Rle rle = rleFromPolygon(xy, kH, kW);
        im.dt.push_back(toCompressedString(rle));
        im.dtBoxes.push_back(toBbox(rle));
      }
    }

    // Ours: decode the strings once (what an evaluator does per annotation), then iou.
    using Clock = std::chrono::steady_clock;
    std::vector<std::vector<Rle>> dts(data.size()), gts(data.size());
    const auto t0 = Clock::now();
    for (size_t i = 0; i < data.size(); ++i) {
      for (const std::string& s : data[i].dt)
        dts[i].push_back(fromCompressedString(s, kH, kW));
      for (const std::string& s : data[i].gt)
        gts[i].push_back(fromCompressedString(s, kH, kW));
    }
    const double decodeSeconds = seconds(Clock::now() - t0);
    const fs::path segmBin = fs::path(dir_.path().toStdString()) / "bench_segm.bin";
    const fs::path bboxBin = fs::path(dir_.path().toStdString()) / "bench_bbox.bin";
    std::ofstream segmOut(segmBin, std::ios::binary), bboxOut(bboxBin, std::ios::binary);
    IouMatrix m;
    double segmSeconds = 0, bboxSeconds = 0;
    for (int repeat = 0; repeat < 3; ++repeat) {  // best of 3, like the Python side
      auto t = Clock::now();
      for (size_t i = 0; i < data.size(); ++i) {
        iou(dts[i], gts[i], data[i].crowd, m);
        if (repeat == 0) {
          segmOut.write(reinterpret_cast<const char*>(m.values.data()),
                        static_cast<std::streamsize>(m.values.size() * sizeof(double)));
        }
      }
      const double segm = seconds(Clock::now() - t);
      t = Clock::now();
      for (size_t i = 0; i < data.size(); ++i) {
        iou(data[i].dtBoxes, data[i].gtBoxes, data[i].crowd, m);
        if (repeat == 0) {
          bboxOut.write(reinterpret_cast<const char*>(m.values.data()),
                        static_cast<std::streamsize>(m.values.size() * sizeof(double)));
        }
      }
      const double bbox = seconds(Clock::now() - t);
      segmSeconds = repeat == 0 ? segm : std::min(segmSeconds, segm);
      bboxSeconds = repeat == 0 ? bbox : std::min(bboxSeconds, bbox);
    }
    segmOut.close();
    bboxOut.close();

    const fs::path input = fs::path(dir_.path().toStdString()) / "bench.json";
    {
      std::ofstream out(input);
      JsonWriter json(out);
      json.beginObject().key("h").value(kH).key("w").value(kW).key("images").beginArray();
      for (const Call& im : data) {
        json.beginObject();
        for (const auto& [key, strings] : {std::pair{"dt", &im.dt}, std::pair{"gt", &im.gt}}) {
          json.key(key).beginArray();
          for (const std::string& s : *strings)
            json.value(s);
          json.endArray();
        }
        for (const auto& [key, boxes] :
             {std::pair{"dt_boxes", &im.dtBoxes}, std::pair{"gt_boxes", &im.gtBoxes}}) {
          json.key(key).beginArray();
          for (const Box& b : *boxes)
            writeBox(json, b);
          json.endArray();
        }
        json.key("iscrowd").beginArray();
        for (uint8_t c : im.crowd)
          json.value(c);
        json.endArray().endObject();
      }
      json.endArray().endObject();
    }
    QString output;
    const bool ok =
        runPython("mask_api_bench.py",
                  {QString::fromStdString(input.string()), QString::fromStdString(segmBin.string()),
                   QString::fromStdString(bboxBin.string())},
                  output, 600000);
    const auto match =
        QRegularExpression("BENCH segm_s=([0-9.e-]+) bbox_s=([0-9.e-]+) equal=1").match(output);
    QVERIFY2(ok && match.hasMatch(), qPrintable(output.right(6000)));
    const double pySegm = match.captured(1).toDouble(), pyBbox = match.captured(2).toDouble();
    qInfo("iou, %d calls of %d detections x %d ground truths (480x640, best of 3), equal:", calls,
          kDts, kGts);
    qInfo("  segm: pycocotools %.3f s | ours %.4f s (x%.1f) | ours + string decode %.4f s (x%.1f)",
          pySegm, segmSeconds, pySegm / segmSeconds, segmSeconds + decodeSeconds,
          pySegm / (segmSeconds + decodeSeconds));
    qInfo("  bbox: pycocotools %.4f s | ours %.4f s (x%.1f)", pyBbox, bboxSeconds,
          pyBbox / bboxSeconds);
  }

  // Random binary masks: encode, string, decode, area, toBbox. Keeps the masks for merges
  // and IoU sets.
  void writeMasks(JsonWriter& json, int count, Counts& n) {
    Random r(1);
    json.key("masks").beginArray();
    for (int i = 0; i < count; ++i) {
      const int h = randomSide(r, 40, 200), w = randomSide(r, 40, 200);
      const cv::Mat mask = randomMask(r, h, w);
      const Rle rle = encodeMask(mask);
      std::string bits;  // column-major, as pycocotools' Fortran-ordered arrays
      std::vector<uint8_t> columnMajor;
      for (int x = 0; x < w; ++x) {
        for (int y = 0; y < h; ++y) {
          bits.push_back(mask.at<uint8_t>(y, x) ? '1' : '0');
          columnMajor.push_back(mask.at<uint8_t>(y, x));
        }
      }
      QVERIFY(encodeColumnMajor(columnMajor, static_cast<uint32_t>(h), static_cast<uint32_t>(w)) ==
              rle);
      QVERIFY(decodeColumnMajor(rle) == columnMajor);
      const cv::Mat decoded = decodeMask(rle);
      QCOMPARE(decoded.rows, h);
      if (!mask.empty()) QCOMPARE(cv::countNonZero(decoded != mask), 0);
      QVERIFY(fromCompressedString(toCompressedString(rle), rle.h, rle.w) == rle);
      json.beginObject().key("h").value(h).key("w").value(w).key("bits").value(bits);
      json.key("counts").value(toCompressedString(rle));
      writeAreaAndBox(json, rle);
      json.endObject();
      masks_.push_back(rle);
      ++n.masks;
    }
    json.endArray();
  }

  // Random valid strings: decode and re-encode, area, toBbox, on sizes they may not fit.
  void writeStrings(JsonWriter& json, int count, Counts& n) {
    Random r(2);
    json.key("strings").beginArray();
    for (int i = 0; i < count; ++i) {
      // h >= 1: pycocotools' toBbox divides by h (a 0-high mask with runs crashes it).
      const auto h = static_cast<uint32_t>(1 + r.pick(r.chance(0.2) ? 100000 : 50));
      const auto w = static_cast<uint32_t>(r.pick(50));
      std::string s;
      Rle rle;
      do {
        s = randomCountsString(r);
        rle = fromCompressedString(s, h, w);
        // pycocotools' rleToString writes into 6 bytes per number, the end mark included:
        // more than that (7-character numbers) overflows its heap buffer.
      } while (toCompressedString(rle).size() + 1 > 6 * rle.counts.size() && !s.empty());
      json.beginObject().key("h").value(h).key("w").value(w).key("counts").value(s);
      json.key("recoded").value(toCompressedString(rle));
      writeAreaAndBox(json, rle);
      json.endObject();
      ++n.strings;
    }
    json.endArray();
  }

  // Random polygon lists through frPyObjects' dispatch, each list's mask and their union.
  void writePolygons(JsonWriter& json, int count, Counts& n) {
    Random r(3);
    json.key("polygons").beginArray();
    for (int i = 0; i < count; ++i) {
      const int h = randomSide(r, 40, 300), w = randomSide(r, 40, 300);
      const std::vector<Polygon> lists = randomPolygonList(r, h, w);
      json.beginObject().key("h").value(h).key("w").value(w).key("lists").beginArray();
      for (const Polygon& p : lists) {
        json.beginArray();
        for (double v : p)
          json.value(v);
        json.endArray();
      }
      json.endArray();
      std::vector<Rle> rles;
      try {
        rles = rlesFromSegmentationList(lists, static_cast<uint32_t>(h), static_cast<uint32_t>(w));
      } catch (const std::invalid_argument&) {
        json.key("error").value(true).endObject();
        ++n.polygons;
        continue;
      }
      json.key("error").value(false).key("counts").beginArray();
      for (const Rle& rle : rles)
        json.value(toCompressedString(rle));
      const Rle merged =
          rleFromSegmentationList(lists, static_cast<uint32_t>(h), static_cast<uint32_t>(w));
      json.endArray().key("merged").value(toCompressedString(merged));
      writeAreaAndBox(json, merged);
      json.endObject();
      ++n.polygons;
      if (rles.size() > 1 && h > 0) polygonMasks_.push_back(merged);
    }
    json.endArray();
  }

  // Boxes to masks (frBbox): fractional, negative, zero-size, off the image.
  void writeBoxMasks(JsonWriter& json, int count, Counts& n) {
    Random r(4);
    json.key("box_masks").beginArray();
    for (int i = 0; i < count; ++i) {
      const int h = randomSide(r, 40, 300), w = randomSide(r, 40, 300);
      std::vector<Box> boxes;
      for (int b = 1 + r.pick(4); b > 0; --b) {
        Box box = randomBox(r, std::max(h, w) + 1);
        box[2] = std::min(box[2], 1000.0);  // no billion-pixel polygons
        box[3] = std::min(box[3], 1000.0);
        boxes.push_back(box);
      }
      json.beginObject().key("h").value(h).key("w").value(w).key("boxes").beginArray();
      for (const Box& b : boxes)
        writeBox(json, b);
      json.endArray().key("counts").beginArray();
      for (const Rle& rle :
           rlesFromBboxes(boxes, static_cast<uint32_t>(h), static_cast<uint32_t>(w)))
        json.value(toCompressedString(rle));
      json.endArray().endObject();
      ++n.boxes;
    }
    json.endArray();
  }

  // Uncompressed RLEs as COCO's crowd regions store them, with zero-length runs, runs that
  // do not fill the mask and values outside uint32 (an error on both sides).
  void writeUncompressed(JsonWriter& json, int count, Counts& n) {
    Random r(5);
    json.key("uncompressed").beginArray();
    for (int i = 0; i < count; ++i) {
      const auto h = static_cast<uint32_t>(1 + r.pick(60)), w = static_cast<uint32_t>(r.pick(60));
      std::vector<int64_t> counts;
      const int64_t total = int64_t{h} * w;
      int64_t left = total;
      while (left > 0 && counts.size() < 200) {
        const int64_t run = r.chance(0.1) ? 0 : std::min<int64_t>(left, 1 + r.pick(30));
        counts.push_back(run);
        left -= run;
      }
      if (r.chance(0.1)) counts.push_back(r.pick(1 << 28));  // does not add up any more
      if (r.chance(0.03))
        counts[static_cast<size_t>(r.pick(static_cast<int>(counts.size())))] =
            r.chance(0.5) ? -1 - r.pick(9) : (int64_t{1} << 32) + r.pick(9);
      // pycocotools takes the size from the object; the image size it is given is unused.
      json.beginObject().key("size").beginArray().value(h).value(w).endArray();
      json.key("counts").beginArray();
      for (int64_t c : counts)
        json.value(c);
      json.endArray();
      try {
        const Rle rle = rleFromUncompressed(counts, h, w);
        json.key("error").value(false).key("out").value(toCompressedString(rle));
        writeAreaAndBox(json, rle);
      } catch (const std::invalid_argument&) {
        json.key("error").value(true);
      }
      json.endObject();
      ++n.uncompressed;
    }
    json.endArray();
  }

  // Union and intersection of 1 to 5 masks of one size (encoded masks and polygon unions).
  void writeMerges(JsonWriter& json, int count, Counts& n) {
    Random r(6);
    std::map<std::pair<uint32_t, uint32_t>, std::vector<const Rle*>> bySize;
    for (const std::vector<Rle>* pool : {&masks_, &polygonMasks_}) {
      for (const Rle& rle : *pool)
        bySize[{rle.h, rle.w}].push_back(&rle);
    }
    std::vector<const std::vector<const Rle*>*> groups;
    for (const auto& [size, rles] : bySize) {
      if (rles.size() >= 2) groups.push_back(&rles);
    }
    QVERIFY(groups.size() > 20);
    json.key("merges").beginArray();
    for (int i = 0; i < count; ++i) {
      const auto& group = *groups[static_cast<size_t>(r.pick(static_cast<int>(groups.size())))];
      std::vector<Rle> inputs;
      for (int k = 1 + r.pick(5); k > 0; --k)
        inputs.push_back(*group[static_cast<size_t>(r.pick(static_cast<int>(group.size())))]);
      json.beginObject().key("inputs").beginArray();
      for (const Rle& rle : inputs)
        writeRle(json, rle);
      json.endArray().key("union").value(toCompressedString(merge(inputs)));
      json.key("intersection").value(toCompressedString(merge(inputs, /*intersect=*/true)));
      json.endObject();
      ++n.merges;
    }
    json.endArray();
  }

  // dt x gt sets of masks with random crowd flags: random, empty, full, identical, disjoint,
  // other-sized and non-canonical masks.
  void writeMaskIous(JsonWriter& json, int count, Counts& n) {
    Random r(7);
    json.key("mask_ious").beginArray();
    for (int i = 0; i < count; ++i) {
      const auto h = static_cast<uint32_t>(1 + r.pick(r.chance(0.1) ? 120 : 24));
      const auto w = static_cast<uint32_t>(1 + r.pick(r.chance(0.1) ? 120 : 24));
      std::vector<Rle> pool;
      for (int k = 2 + r.pick(4); k > 0; --k) {
        pool.push_back(encodeMask(randomMask(r, static_cast<int>(h), static_cast<int>(w))));
      }
      pool.push_back(Rle{h, w, {h * w}});
      pool.push_back(Rle{h, w, {0, h * w}});
      cv::Mat left(static_cast<int>(h), static_cast<int>(w), CV_8UC1, cv::Scalar(0));
      left.colRange(0, static_cast<int>(w + 1) / 2).setTo(1);
      pool.push_back(encodeMask(left));
      pool.push_back(encodeMask(left == 0));
      // The same non-canonical mask on both sides is where pycocotools' walk stops early.
      for (size_t k = 0, size = pool.size(); k < size; ++k) {
        if (r.chance(0.2)) pool.push_back(withZeroRuns(r, pool[k]));
      }
      auto draw = [&]() -> Rle {
        if (r.chance(0.05)) {  // another size: -1 where the boxes overlap
          return encodeMask(randomMask(r, static_cast<int>(w), static_cast<int>(h)));
        }
        const Rle& base = pool[static_cast<size_t>(r.pick(static_cast<int>(pool.size())))];
        return r.chance(0.1) ? withZeroRuns(r, base) : base;
      };
      std::vector<Rle> dt, gt;
      std::vector<uint8_t> crowd;
      for (int k = r.pick(7); k > 0; --k)
        dt.push_back(draw());
      for (int k = r.pick(7); k > 0; --k) {
        gt.push_back(draw());
        crowd.push_back(r.chance(0.3) ? static_cast<uint8_t>(1 + r.pick(255)) : 0);
      }
      if (r.chance(0.2) && !dt.empty()) {
        gt.push_back(dt[0]);
        crowd.push_back(0);
      }
      json.beginObject();
      for (const auto& [key, rles] : {std::pair{"dt", &dt}, std::pair{"gt", &gt}}) {
        json.key(key).beginArray();
        for (const Rle& rle : *rles)
          writeRle(json, rle);
        json.endArray();
      }
      json.key("iscrowd").beginArray();
      for (uint8_t c : crowd)
        json.value(c);
      const IouMatrix m = iou(dt, gt, crowd);
      std::vector<const Rle*> dtPointers, gtPointers;
      for (const Rle& rle : dt)
        dtPointers.push_back(&rle);
      for (const Rle& rle : gt)
        gtPointers.push_back(&rle);
      IouMatrix viaPointers;
      iou(dtPointers, gtPointers, crowd, viaPointers);
      QVERIFY(viaPointers.values == m.values && viaPointers.rows == m.rows);
      json.endArray().key("iou");
      writeMatrix(json, m);
      json.endObject();
      ++n.maskIous;
    }
    json.endArray();
  }

  void writeBoxIous(JsonWriter& json, int count, Counts& n) {
    Random r(8);
    json.key("box_ious").beginArray();
    for (int i = 0; i < count; ++i) {
      const double scale = r.chance(0.2) ? r.uniform(0, 1e6) : r.uniform(1, 100);
      std::vector<Box> dt, gt;
      std::vector<uint8_t> crowd;
      for (int k = r.pick(9); k > 0; --k)
        dt.push_back(r.chance(0.1) && !dt.empty() ? dt.back() : randomBox(r, scale));
      for (int k = r.pick(9); k > 0; --k) {
        gt.push_back(r.chance(0.15) && !dt.empty()
                         ? dt[static_cast<size_t>(r.pick(static_cast<int>(dt.size())))]
                         : randomBox(r, scale));
        crowd.push_back(r.chance(0.3) ? static_cast<uint8_t>(1 + r.pick(255)) : 0);
      }
      json.beginObject();
      for (const auto& [key, boxes] : {std::pair{"dt", &dt}, std::pair{"gt", &gt}}) {
        json.key(key).beginArray();
        for (const Box& b : *boxes)
          writeBox(json, b);
        json.endArray();
      }
      json.key("iscrowd").beginArray();
      for (uint8_t c : crowd)
        json.value(c);
      json.endArray().key("iou");
      writeMatrix(json, iou(dt, gt, crowd));
      json.endObject();
      ++n.boxIous;
    }
    json.endArray();
  }

  QTemporaryDir dir_;
  QString python_;
  std::vector<Rle> masks_, polygonMasks_;
};

QTEST_GUILESS_MAIN(TestMaskApi)
#include "test_mask_api.moc"

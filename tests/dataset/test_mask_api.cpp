// The mask API (dataset/mask/rle.h) against pycocotools, live: every annotation of tinycoco and
// thousands of seeded random cases (masks, RLE strings, polygons, boxes, uncompressed RLEs,
// merges, mask and box IoU matrices) are written with our results to a json that
// mask_api_check.py recomputes with pycocotools and compares exactly. Small cases with
// known answers and the malformed inputs pycocotools cannot take (it would crash or read
// out of bounds) are checked here. The fixture: mask_api_test.h.
#include <simdjson.h>

#include <QElapsedTimer>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTest>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <opencv2/core.hpp>
#include <string>

#include "tests/dataset/mask_api_test.h"

namespace fs = std::filesystem;

namespace {

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

}  // namespace

void TestMaskApi::initTestCase() {
  QVERIFY(dir_.isValid());
  if (qEnvironmentVariableIsSet("MRCNN_KEEP_TEST_FILES")) {
    dir_.setAutoRemove(false);
    qInfo("keeping the json files in %s", qPrintable(dir_.path()));
  }
  python_ = qEnvironmentVariable("MRCNN_PYTHON");
}

// pycocotools' answers for small cases, computed with 2.0.11 (the parity tests below ask
// it live; these name the rules).
void TestMaskApi::crowdRuleAndEmptyMasks() {
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

void TestMaskApi::boxIouRules() {
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
void TestMaskApi::zeroLengthRunsWalkedLikePycocotools() {
  const Rle odd{8, 1, {2, 0, 2, 3, 1}}, plain{8, 1, {4, 3, 1}};
  const std::vector<Rle> a = {odd}, b = {plain};
  const std::vector<uint8_t> none = {0}, yes = {1};
  QCOMPARE(iou(a, a, none).at(0, 0), 0.0);
  QCOMPARE(iou(a, b, none).at(0, 0), 1.0);
  QCOMPARE(iou(b, a, yes).at(0, 0), 1.0);
  // Our merge makes it canonical (pycocotools would return [2] here, a truncated mask).
  QVERIFY(merge(std::vector<Rle>{odd, odd}) == plain);
}

void TestMaskApi::incompleteMasksAreRejected() {
  const std::vector<Rle> bad = {Rle{3, 3, {4, 4}}}, good = {Rle{3, 3, {4, 4, 1}}};
  const std::vector<uint8_t> none = {0};
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, iou(bad, good, none));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, iou(good, bad, none));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, decodeColumnMajor(bad[0]));
  QCOMPARE(iou(good, good, none).at(0, 0), 1.0);
}

void TestMaskApi::frPyObjectsDispatch() {
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
void TestMaskApi::malformedStringsThrow() {
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

void TestMaskApi::tinycocoAgreesWithPycocotools() {
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

void TestMaskApi::randomCasesAgreeWithPycocotools() {
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

QTEST_GUILESS_MAIN(TestMaskApi)

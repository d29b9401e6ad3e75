// The COCO instances reader: the real tinycoco files read field for field as json and
// pycocotools read them (masks through annToRLE included), the indexes, the pipeline giving
// the same dataset whatever the thread count, and every class of error and warning with the
// exact place it names.
#include <simdjson.h>

#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "dataset/coco/coco.h"
#include "io/json_writer.h"
#include "dataset/mask/rle.h"
#include "tests/common/files.h"

namespace fs = std::filesystem;
using namespace mrcnn::dataset;
using mrcnn::io::JsonWriter;

namespace {

using mrcnn::testing::readAll;

void writeAll(const fs::path& path, std::string_view text) {
  std::ofstream(path, std::ios::binary)
      .write(text.data(), static_cast<std::streamsize>(text.size()));
}

// Offset of the n-th (0-based) occurrence of needle; npos when there are fewer.
size_t nthFind(const std::string& text, std::string_view needle, size_t n) {
  size_t at = text.find(needle);
  for (size_t i = 0; i < n && at != std::string::npos; ++i)
    at = text.find(needle, at + 1);
  return at;
}

std::optional<CocoError> loadError(const fs::path& path, unsigned threads = 1) {
  try {
    loadCoco(path, {.threads = threads});
  } catch (const CocoError& e) {
    return e;
  }
  return std::nullopt;
}

bool sameDouble(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

double number(simdjson::dom::element e) {
  if (e.is_int64()) return static_cast<double>(int64_t(e));
  return double(e);
}

QString describe(const CocoWarning& w) {
  return QString("%1 at %2 (%3): %4")
      .arg(QString::fromStdString(std::string(warningName(w.code))))
      .arg(w.byte_offset)
      .arg(QString::fromStdString(w.key_path), QString::fromStdString(w.message));
}

// Every table of two datasets equal, spans compared by content.
void compareDatasets(const CocoDataset& a, const CocoDataset& b) {
  QCOMPARE(a.images().size(), b.images().size());
  for (size_t i = 0; i < a.images().size(); ++i) {
    QCOMPARE(a.images()[i].id, b.images()[i].id);
    QCOMPARE(a.images()[i].width, b.images()[i].width);
    QCOMPARE(a.images()[i].height, b.images()[i].height);
    QVERIFY(a.images()[i].file_name == b.images()[i].file_name);
  }
  QCOMPARE(a.annotations().size(), b.annotations().size());
  for (size_t i = 0; i < a.annotations().size(); ++i) {
    const CocoAnnotation& x = a.annotations()[i];
    const CocoAnnotation& y = b.annotations()[i];
    QCOMPARE(x.id, y.id);
    QCOMPARE(x.image_index, y.image_index);
    QCOMPARE(x.label, y.label);
    QVERIFY(x.bbox == y.bbox);
    QVERIFY(sameDouble(x.area, y.area));
    QVERIFY(x.segmentation == y.segmentation);
    QVERIFY(annotationRle(a, x) == annotationRle(b, y));
  }
  QCOMPARE(a.warningCount(), b.warningCount());
  for (size_t i = 0; i < a.warnings().size(); ++i)
    QCOMPARE(describe(a.warnings()[i]), describe(b.warnings()[i]));
}

constexpr int kCopies = 24;

// A multi-batch file: tinycoco's train annotations repeated (fresh ids), written back with
// our JsonWriter from what loadCoco read.
std::string replicatedJson(const CocoDataset& d, int copies) {
  std::ostringstream out;
  JsonWriter json(out);
  json.beginObject().key("images").beginArray();
  for (const CocoImage& im : d.images()) {
    json.beginObject().key("id").value(im.id).key("file_name").value(im.file_name);
    json.key("width").value(im.width).key("height").value(im.height).endObject();
  }
  json.endArray().key("annotations").beginArray();
  for (int c = 0; c < copies; ++c) {
    for (const CocoAnnotation& a : d.annotations()) {
      json.beginObject().key("id").value(a.id * 100 + c).key("image_id").value(a.image_id);
      json.key("category_id").value(a.category_id).key("iscrowd").value(a.iscrowd ? 1 : 0);
      json.key("area").value(a.area).key("bbox").beginArray();
      for (double v : a.bbox)
        json.value(v);
      json.endArray().key("segmentation");
      if (a.segmentation == SegmentationKind::kPolygons) {
        json.beginArray();
        for (std::span<const double> p : d.polygons(a)) {
          json.beginArray();
          for (double v : p)
            json.value(v);
          json.endArray();
        }
        json.endArray();
      } else {
        const CocoRle& r = d.rle(a);
        json.beginObject().key("size").beginArray().value(r.height).value(r.width).endArray();
        json.key("counts").beginArray();
        for (uint32_t v : r.counts)
          json.value(v);
        json.endArray().endObject();
      }
      json.endObject();
    }
  }
  json.endArray().key("categories").beginArray();
  for (const CocoCategory& c : d.categories())
    json.beginObject().key("id").value(c.id).key("name").value(c.name).endObject();
  json.endArray().endObject();
  return out.str();
}

// Replaces the number bbox[2] of annotations[k] with a string; returns the string's offset.
size_t putStringInBbox(std::string& text, size_t k) {
  const size_t bbox = nthFind(text, "\"bbox\":", k);
  const size_t open = text.find('[', bbox);
  const size_t second = text.find(',', text.find(',', open) + 1) + 1;
  const size_t start = text.find_first_not_of(' ', second);
  const size_t end = text.find_first_of(",]", start);
  text.replace(start, end - start, "\"12\"");
  return start;
}

}  // namespace

class TestCocoReader : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    const QString shared = qEnvironmentVariable("MRCNN_SHARED_DIR");
    QVERIFY2(!shared.isEmpty(), "MRCNN_SHARED_DIR is not set (run through ctest)");
    tiny_ = fs::path(shared.toStdString()) / "data/tinycoco/annotations";
    QVERIFY2(fs::is_directory(tiny_), qPrintable(QString::fromStdString(tiny_.string())));
  }

  void countsMatchTheFile_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("images");
    QTest::addColumn<int>("annotations");
    QTest::addColumn<int>("crowds");
    QTest::addRow("train") << "instances_train2017.json" << 32 << 288 << 4;
    QTest::addRow("val") << "instances_val2017.json" << 6 << 136 << 1;
  }
  void countsMatchTheFile() {
    QFETCH(QString, file);
    QFETCH(int, images);
    QFETCH(int, annotations);
    QFETCH(int, crowds);
    const CocoDataset d = loadCoco(tiny_ / file.toStdString());
    QCOMPARE(d.images().size(), size_t(images));
    QCOMPARE(d.annotations().size(), size_t(annotations));
    QCOMPARE(d.categories().size(), size_t{80});
    QCOMPARE(d.warningCount(), uint64_t{0});
    const auto crowd = std::count_if(d.annotations().begin(), d.annotations().end(),
                                     [](const CocoAnnotation& a) { return a.iscrowd; });
    QCOMPARE(crowd, crowds);
    for (const CocoAnnotation& a : d.annotations()) {
      QCOMPARE(a.segmentation,
               a.iscrowd ? SegmentationKind::kUncompressedRle : SegmentationKind::kPolygons);
    }
    // Labels: contiguous 1..80 in ascending category id; COCO's ids have gaps (12, 26...).
    for (size_t i = 0; i < d.categories().size(); ++i) {
      QCOMPARE(d.label(d.categories()[i].id), uint32_t(i + 1));
      if (i > 0) QVERIFY(d.categories()[i - 1].id < d.categories()[i].id);
    }
    QCOMPARE(d.label(12), uint32_t{0});
    QCOMPARE(d.label(90), uint32_t{80});
  }

  void everyFieldMatchesPycocotools_data() {
    QTest::addColumn<QString>("file");
    QTest::addRow("train") << "instances_train2017.json";
    QTest::addRow("val") << "instances_val2017.json";
  }
  void everyFieldMatchesPycocotools() {
    QFETCH(QString, file);
    const fs::path json = tiny_ / file.toStdString();
    const QString python = qEnvironmentVariable("MRCNN_PYTHON");
    if (python.isEmpty()) QSKIP("MRCNN_PYTHON is not set (run through ctest): no pycocotools");
    const fs::path expectedPath =
        fs::path(dir_.path().toStdString()) / ("expected_" + file.toStdString());
    QProcess process;
    process.setProcessChannelMode(QProcess::MergedChannels);
    const QString script =
        qEnvironmentVariable("MRCNN_SOURCE_DIR") + "/tests/dataset/coco_reader_expected.py";
    process.start(python, {script, QString::fromStdString(json.string()),
                           QString::fromStdString(expectedPath.string())});
    QVERIFY2(process.waitForStarted(), qPrintable("cannot run MRCNN_PYTHON=" + python));
    QVERIFY2(process.waitForFinished(120000), "the pycocotools script timed out");
    const QString output = QString::fromUtf8(process.readAll());
    QVERIFY2(process.exitStatus() == QProcess::NormalExit && process.exitCode() == 0 &&
                 output.contains("RESULT"),
             qPrintable(output.right(4000)));

    const CocoDataset d = loadCoco(json);
    simdjson::dom::parser parser;
    const simdjson::dom::element expected = parser.load(expectedPath.string());

    simdjson::dom::array images = expected["images"];
    QCOMPARE(d.images().size(), images.size());
    size_t i = 0;
    for (simdjson::dom::element im : images) {
      const CocoImage& ours = d.images()[i];
      QCOMPARE(ours.id, int64_t(im["id"]));
      QCOMPARE(std::string(ours.file_name), std::string(std::string_view(im["file_name"])));
      QCOMPARE(int64_t{ours.width}, int64_t(im["width"]));
      QCOMPARE(int64_t{ours.height}, int64_t(im["height"]));
      QCOMPARE(d.imageIndex(ours.id), std::optional<uint32_t>(uint32_t(i)));
      ++i;
    }
    QCOMPARE(d.imageIndex(-5), std::optional<uint32_t>());

    std::vector<int64_t> categoryIds;
    for (simdjson::dom::element c : expected["categories"].get_array()) {
      const auto id = int64_t(c["id"]);
      categoryIds.push_back(id);
      const CocoCategory& ours = d.categories()[d.label(id) - 1];
      QCOMPARE(ours.name, std::string(std::string_view(c["name"])));
      QCOMPARE(ours.supercategory, std::string(std::string_view(c["supercategory"])));
    }
    std::sort(categoryIds.begin(), categoryIds.end());
    for (size_t k = 0; k < categoryIds.size(); ++k)
      QCOMPARE(d.label(categoryIds[k]), uint32_t(k + 1));

    simdjson::dom::array annotations = expected["annotations"];
    QCOMPARE(d.annotations().size(), annotations.size());
    i = 0;
    for (simdjson::dom::element e : annotations) {
      const CocoAnnotation& a = d.annotations()[i++];
      const QByteArray where = "annotation " + QByteArray::number(qint64(a.id));
      QCOMPARE(a.id, int64_t(e["id"]));
      QCOMPARE(a.image_id, int64_t(e["image_id"]));
      QCOMPARE(a.category_id, int64_t(e["category_id"]));
      QCOMPARE(a.image_index, *d.imageIndex(a.image_id));
      QCOMPARE(a.label, d.label(a.category_id));
      QVERIFY2(sameDouble(a.area, number(e["area"])), where);
      size_t k = 0;
      for (simdjson::dom::element v : e["bbox"].get_array())
        QVERIFY2(sameDouble(a.bbox[k++], number(v)), where);
      QCOMPARE(k, size_t{4});
      QCOMPARE(a.iscrowd, int64_t(e["iscrowd"]) != 0);
      QCOMPARE(int64_t{a.ignore}, int64_t(e["ignore"]));
      const std::string_view kind = e["kind"];
      if (kind == "polygons") {
        QCOMPARE(a.segmentation, SegmentationKind::kPolygons);
        simdjson::dom::array polygons = e["segmentation"];
        QCOMPARE(size_t{a.segment_count}, polygons.size());
        size_t p = 0;
        for (simdjson::dom::element polygon : polygons) {
          const std::span<const double> ours = d.polygons(a)[p++];
          QCOMPARE(ours.size(), polygon.get_array().size());
          size_t c = 0;
          for (simdjson::dom::element v : polygon.get_array())
            QVERIFY2(sameDouble(ours[c++], number(v)), where);
        }
      } else {
        QCOMPARE(kind, std::string_view("counts"));
        QCOMPARE(a.segmentation, SegmentationKind::kUncompressedRle);
        const CocoRle& rle = d.rle(a);
        QCOMPARE(int64_t{rle.height}, int64_t(e["segmentation"]["size"].at(0)));
        QCOMPARE(int64_t{rle.width}, int64_t(e["segmentation"]["size"].at(1)));
        std::vector<uint32_t> counts;
        for (simdjson::dom::element v : e["segmentation"]["counts"].get_array())
          counts.push_back(static_cast<uint32_t>(int64_t(v)));
        QVERIFY2(std::equal(counts.begin(), counts.end(), rle.counts.begin(), rle.counts.end()),
                 where);
      }
      // The mask, exactly as pycocotools' annToRLE makes it.
      QCOMPARE(toCompressedString(annotationRle(d, a)), std::string(std::string_view(e["rle"])));
    }

    // Per-image annotation lists: pycocotools' imgToAnns, same order.
    for (uint32_t im = 0; im < d.images().size(); ++im) {
      std::vector<int64_t> ours;
      for (uint32_t k : d.annotationsOfImage(im))
        ours.push_back(d.annotations()[k].id);
      std::vector<int64_t> theirs;
      const std::string key = std::to_string(d.images()[im].id);
      for (simdjson::dom::element v : expected["img_to_anns"][key].get_array())
        theirs.push_back(int64_t(v));
      QVERIFY2(ours == theirs, qPrintable(QString::fromStdString("image " + key)));
    }
  }

  void threadsGiveTheSameDataset() {
    const CocoDataset tiny = loadCoco(tiny_ / "instances_train2017.json");
    const fs::path big = fs::path(dir_.path().toStdString()) / "replicated.json";
    writeAll(big, replicatedJson(tiny, kCopies));
    QVERIFY(fs::file_size(big) > (size_t{3} << 20));  // several batches of 1 MB
    const CocoDataset one = loadCoco(big, {.threads = 1});
    QCOMPARE(one.annotations().size(), size_t{288 * kCopies});
    QCOMPARE(one.warningCount(), uint64_t{0});
    for (unsigned threads : {2u, 3u}) {
      const CocoDataset many = loadCoco(big, {.threads = threads});
      compareDatasets(one, many);
    }
    // The copies' masks are the originals' masks.
    for (size_t k = 0; k < tiny.annotations().size(); ++k) {
      QVERIFY(annotationRle(tiny, tiny.annotations()[k]) ==
              annotationRle(one, one.annotations()[k + 5 * 288]));
    }
  }

  void escapedStringsAndCompressedRle() {
    // A compressed RLE whose counts string holds a backslash (JSON-escaped in the file).
    const Rle mask{10, 10, {44, 56}};
    const std::string counts = toCompressedString(mask);
    QVERIFY(counts.find('\\') != std::string::npos);
    std::ostringstream out;
    JsonWriter json(out);
    json.beginObject().key("images").beginArray().beginObject();
    json.key("id").value(7).key("file_name").value("dir/a\"b\xc3\xa9.jpg");
    json.key("width").value(10).key("height").value(10).endObject().endArray();
    json.key("annotations").beginArray().beginObject().key("id").value(1);
    json.key("image_id").value(7).key("category_id").value(1).key("area").value(44.0);
    json.key("bbox").beginArray().value(4).value(4).value(1).value(5).endArray();
    json.key("segmentation").beginObject().key("counts").value(counts);
    json.key("size").beginArray().value(10).value(10).endArray().endObject();
    json.endObject().endArray();
    json.key("categories").beginArray().beginObject().key("id").value(1).key("name").value("x");
    json.endObject().endArray().endObject();
    const fs::path path = fs::path(dir_.path().toStdString()) / "escapes.json";
    writeAll(path, out.str());
    QVERIFY(out.str().find("\\\\") != std::string::npos);

    const CocoDataset d = loadCoco(path);
    QCOMPARE(d.warningCount(), uint64_t{0});
    QCOMPARE(std::string(d.images()[0].file_name), std::string("dir/a\"b\xc3\xa9.jpg"));
    QCOMPARE(d.annotations()[0].segmentation, SegmentationKind::kCompressedRle);
    QCOMPARE(std::string(d.rle(d.annotations()[0]).compressed), counts);
    QVERIFY(annotationRle(d, d.annotations()[0]) == mask);
  }

  void errorMissingFile() {
    const fs::path path = fs::path(dir_.path().toStdString()) / "nope.json";
    const std::optional<CocoError> e = loadError(path);
    QVERIFY(e);
    QCOMPARE(e->byteOffset(), std::optional<uint64_t>());
    QCOMPARE(QString(e->what()),
             QString::fromStdString(path.string()) + ": cannot open: No such file or directory");
  }

  void errorNotJson() {
    const fs::path path = fs::path(dir_.path().toStdString()) / "hello.json";
    writeAll(path, "hello, world\n");
    const std::optional<CocoError> e = loadError(path);
    QVERIFY(e);
    QCOMPARE(e->byteOffset(), std::optional<uint64_t>(0));
    QCOMPARE(e->reason(), std::string("expected a JSON object at the top level, got 'h'"));
    writeAll(path, "");
    QVERIFY(loadError(path));
    QCOMPARE(loadError(path)->byteOffset(), std::optional<uint64_t>(0));
  }

  void errorTopLevelType() {
    const fs::path path = fs::path(dir_.path().toStdString()) / "array.json";
    writeAll(path, "  [{\"images\": []}]");
    const std::optional<CocoError> e = loadError(path);
    QVERIFY(e);
    QCOMPARE(QString(e->what()), QString::fromStdString(path.string()) +
                                     ": byte 2: expected a JSON object at the top level, got an "
                                     "array");
  }

  void errorImagesNotArray() {
    const fs::path path = fs::path(dir_.path().toStdString()) / "images_object.json";
    const std::string text = R"({"info": {}, "images": {"id": 1}, "annotations": []})";
    writeAll(path, text);
    const std::optional<CocoError> e = loadError(path);
    QVERIFY(e);
    QCOMPARE(e->byteOffset(), std::optional<uint64_t>(text.find("{\"id\"")));
    QCOMPARE(e->keyPath(), std::string("images"));
    QCOMPARE(e->reason(), std::string("expected an array, got an object"));
  }

  void errorTruncated() {
    const std::string text = readAll(tiny_ / "instances_train2017.json");
    const fs::path path = fs::path(dir_.path().toStdString()) / "truncated.json";
    // Cut inside annotations[100], inside a number of a polygon.
    const size_t cut = text.find("[[", nthFind(text, "\"segmentation\":", 100)) + 7;
    writeAll(path, std::string_view(text).substr(0, cut));
    for (unsigned threads : {1u, 2u}) {
      const std::optional<CocoError> e = loadError(path, threads);
      QVERIFY(e);
      QCOMPARE(e->byteOffset(), std::optional<uint64_t>(cut));
      QCOMPARE(e->keyPath(), std::string("annotations[100]"));
      QCOMPARE(e->reason(), std::string("unexpected end of file (is the file truncated?)"));
    }
    // Cut between two top-level keys.
    writeAll(path, std::string_view(text).substr(0, text.find("\"categories\"")));
    QVERIFY(loadError(path));
    QVERIFY(QString(loadError(path)->what()).contains("unexpected end of file"));
  }

  void errorStringInBbox() {
    std::string text = readAll(tiny_ / "instances_train2017.json");
    const size_t at = putStringInBbox(text, 201);
    const fs::path path = fs::path(dir_.path().toStdString()) / "bbox_string.json";
    writeAll(path, text);
    for (unsigned threads : {1u, 2u}) {
      const std::optional<CocoError> e = loadError(path, threads);
      QVERIFY(e);
      QCOMPARE(QString(e->what()), QString::fromStdString(path.string()) + ": byte " +
                                       QString::number(at) +
                                       ": annotations[201].bbox[2]: expected a number, got a "
                                       "string");
    }
  }

  void errorReportedIsTheFirstInTheFile() {
    // A multi-batch file with faults in its first and last batches, and then cut short: the
    // pipeline must report the first fault, as a sequential reader would.
    const CocoDataset tiny = loadCoco(tiny_ / "instances_train2017.json");
    std::string text = replicatedJson(tiny, kCopies);
    const size_t last = putStringInBbox(text, 6000);
    const size_t first = putStringInBbox(text, 10);
    QVERIFY(first < last);
    text.resize(text.size() - 100);
    const fs::path path = fs::path(dir_.path().toStdString()) / "two_faults.json";
    writeAll(path, text);
    for (unsigned threads : {1u, 2u, 3u}) {
      const std::optional<CocoError> e = loadError(path, threads);
      QVERIFY(e);
      QCOMPARE(e->byteOffset(), std::optional<uint64_t>(first));
      QCOMPARE(e->keyPath(), std::string("annotations[10].bbox[2]"));
    }
  }

  void warningsAreRecordedAndTheRestLoads() {
    // One record a line in the fixture, so that the expected offsets are easy to find.
    const fs::path path = fs::path(qEnvironmentVariable("MRCNN_SOURCE_DIR").toStdString()) /
                          "tests/dataset/coco_reader_warnings.json";
    const std::string text = readAll(path);
    QVERIFY2(!text.empty(), qPrintable(QString::fromStdString(path.string())));
    const auto line = [&](int n) {  // offset of the n-th (0-based) line: one record each
      size_t at = 0;
      for (int i = 0; i < n; ++i)
        at = text.find('\n', at) + 1;
      return uint64_t{at};
    };
    const auto in = [&](int n, std::string_view needle) {
      return line(n) + text.substr(line(n)).find(needle);
    };
    struct Expected {
      CocoWarningCode code;
      uint64_t offset;
      const char* path;
      std::optional<int64_t> image_id;
      std::optional<int64_t> annotation_id;
    };
    const std::vector<Expected> expected = {
        {CocoWarningCode::kUnknownImageId, line(2), "annotations[1].image_id", 99, 2},
        {CocoWarningCode::kDuplicateAnnotationId, line(3), "annotations[2].id", 2, 1},
        {CocoWarningCode::kBadBbox, in(4, "[0, 0, -1"), "annotations[3].bbox", 1, 4},
        {CocoWarningCode::kBadBbox, in(5, "[0, 0, 1]"), "annotations[4].bbox", 1, 5},
        {CocoWarningCode::kCrowdWithoutRle, line(6), "annotations[5].segmentation", 1, 6},
        {CocoWarningCode::kBadSegmentation, in(7, "5}"), "annotations[6].segmentation", 2, 7},
        {CocoWarningCode::kUnknownCategoryId, line(8), "annotations[7].category_id", 2, 8},
        {CocoWarningCode::kMissingField, line(10), "annotations[9]", 2, 10},
        {CocoWarningCode::kDuplicateImageId, line(15), "images[1].id", 1, std::nullopt},
        {CocoWarningCode::kBadImage, line(17), "images[3]", 3, std::nullopt},
    };
    for (unsigned threads : {1u, 2u}) {
      const CocoDataset d = loadCoco(path, {.threads = threads});
      QString all;
      for (const CocoWarning& w : d.warnings())
        all += describe(w) + "\n";
      QVERIFY2(d.warnings().size() == expected.size(), qPrintable(all));
      QCOMPARE(d.warningCount(), uint64_t{expected.size()});
      for (size_t i = 0; i < expected.size(); ++i) {
        const CocoWarning& w = d.warnings()[i];
        const Expected& x = expected[i];
        QVERIFY2(w.code == x.code, qPrintable(describe(w)));
        QVERIFY2(w.byte_offset == x.offset,
                 qPrintable(describe(w) + " expected at " + QString::number(x.offset)));
        QCOMPARE(w.key_path, std::string(x.path));
        QCOMPARE(w.image_id, x.image_id);
        QCOMPARE(w.annotation_id, x.annotation_id);
        QVERIFY(!w.message.empty());
      }
      // What could be kept is: ids 1, 1 (the duplicate), 6, 7, 9, 10; images 1 and 2.
      std::vector<int64_t> ids;
      for (const CocoAnnotation& a : d.annotations())
        ids.push_back(a.id);
      QCOMPARE(ids, (std::vector<int64_t>{1, 1, 6, 7, 9, 10}));
      QCOMPARE(d.images().size(), size_t{2});
      QCOMPARE(std::string(d.images()[0].file_name), std::string("a.jpg"));
      QCOMPARE(d.imageIndex(2), std::optional<uint32_t>(1));
      QCOMPARE(d.imageIndex(3), std::optional<uint32_t>());
      QCOMPARE(d.label(1), uint32_t{1});
      QCOMPARE(d.label(3), uint32_t{2});
      const auto of = [&](uint32_t image) {
        const auto span = d.annotationsOfImage(image);
        return std::vector<uint32_t>(span.begin(), span.end());
      };
      QCOMPARE(of(0), (std::vector<uint32_t>{0, 2}));
      QCOMPARE(of(1), (std::vector<uint32_t>{1, 3, 4, 5}));
      const CocoAnnotation& crowd = d.annotations()[2];
      QVERIFY(crowd.iscrowd);
      QCOMPARE(crowd.segmentation, SegmentationKind::kPolygons);
      const CocoAnnotation& noSegmentation = d.annotations()[3];
      QCOMPARE(noSegmentation.segmentation, SegmentationKind::kNone);
      QCOMPARE(noSegmentation.ignore, int8_t{1});
      QCOMPARE(area(annotationRle(d, noSegmentation)), uint64_t{0});
      const CocoAnnotation& rle = d.annotations()[4];
      QCOMPARE(rle.segmentation, SegmentationKind::kUncompressedRle);
      QVERIFY(rle.bbox == (std::array<double, 4>{0.5, 0.25, 1, 1}));
      QCOMPARE(area(annotationRle(d, rle)), uint64_t{2});
      QVERIFY(std::isnan(d.annotations()[5].area));
    }
  }

 private:
  QTemporaryDir dir_;
  fs::path tiny_;
};

QTEST_GUILESS_MAIN(TestCocoReader)
#include "test_coco_reader.moc"

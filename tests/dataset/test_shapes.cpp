// The synthetic shapes dataset: determinism, the stamp, COCO validity, mask/area/bbox
// consistency, and parity of our mask API with pycocotools (run from the project's Python).
#include <simdjson.h>

#include <QElapsedTimer>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <fstream>
#include <map>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <set>
#include <sstream>

#include "io/json_writer.h"
#include "dataset/mask/rle.h"
#include "dataset/shapes/shapes_generator.h"
#include "tests/common/files.h"

namespace fs = std::filesystem;
using namespace mrcnn::dataset;
using mrcnn::io::JsonWriter;

namespace {

constexpr std::string_view kSplits[] = {"train", "val"};

ShapesOptions smallOptions(const QTemporaryDir& dir, uint32_t seed = 2026) {
  ShapesOptions o;
  o.root = dir.path().toStdString();
  o.train_images = 20;
  o.val_images = 5;
  o.seed = seed;
  return o;
}

using mrcnn::testing::readAll;

// Relative path -> bytes of every file under root.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) files[fs::relative(e.path(), root).string()] = readAll(e.path());
  }
  return files;
}

// One annotation as the C++ mask API reads it back from the json.
struct ParsedAnnotation {
  int64_t id = 0, imageId = 0, categoryId = 0, iscrowd = 0;
  std::string kind;  // "polygons", "rle", "counts"
  std::vector<Polygon> polygons;
  Rle rle;
  double area = 0;
  std::array<double, 4> bbox{};
};

struct ParsedImage {
  int64_t width = 0, height = 0;
  std::string fileName;
};

struct ParsedSplit {
  std::map<int64_t, ParsedImage> images;
  std::set<int64_t> categories;
  std::vector<ParsedAnnotation> annotations;
};

double number(simdjson::dom::element e) {
  if (e.is_double()) return double(e);
  if (e.is_int64()) return static_cast<double>(int64_t(e));
  throw std::runtime_error("not a number");
}

// Parses one instances json, QVERIFYing the COCO structure on the way.
void parseSplit(const fs::path& file, ParsedSplit& out) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.load(file.string());
  QVERIFY(doc["info"].is_object());
  QVERIFY(doc["licenses"].is_array());
  for (simdjson::dom::element c : doc["categories"].get_array()) {
    const int64_t id = c["id"].get_int64();
    QVERIFY2(out.categories.insert(id).second, "duplicate category id");
    QVERIFY(id >= 1);
    QVERIFY(c["name"].is_string());
    QCOMPARE(std::string_view(c["supercategory"]), std::string_view("shape"));
  }
  QVERIFY(out.categories.size() >= 5);
  QCOMPARE(*out.categories.begin(), int64_t{1});
  for (simdjson::dom::element im : doc["images"].get_array()) {
    ParsedImage image{im["width"].get_int64(), im["height"].get_int64(),
                      std::string(std::string_view(im["file_name"]))};
    QVERIFY(out.images.emplace(im["id"].get_int64(), image).second);
    QVERIFY(fs::is_regular_file(file.parent_path().parent_path() / "images" /
                                file.stem().string().substr(10) / image.fileName));
  }
  std::set<int64_t> ids;
  for (simdjson::dom::element a : doc["annotations"].get_array()) {
    ParsedAnnotation p;
    p.id = a["id"].get_int64();
    p.imageId = a["image_id"].get_int64();
    p.categoryId = a["category_id"].get_int64();
    p.iscrowd = a["iscrowd"].get_int64();
    QVERIFY2(ids.insert(p.id).second, "duplicate annotation id");
    QVERIFY2(out.images.count(p.imageId) == 1, "annotation of a missing image");
    QVERIFY2(out.categories.count(p.categoryId) == 1, "annotation of a missing category");
    QVERIFY(p.iscrowd == 0 || p.iscrowd == 1);
    QVERIFY(a["area"].is_double());
    p.area = a["area"].get_double();
    simdjson::dom::array bbox = a["bbox"].get_array();
    QCOMPARE(bbox.size(), size_t{4});
    for (size_t i = 0; i < 4; ++i) {
      QVERIFY2(bbox.at(i).is_double(), "bbox values must be floats");
      p.bbox[i] = bbox.at(i).get_double();
    }
    const ParsedImage& image = out.images[p.imageId];
    const auto h = static_cast<uint32_t>(image.height), w = static_cast<uint32_t>(image.width);
    simdjson::dom::element seg = a["segmentation"];
    if (seg.is_array()) {
      p.kind = "polygons";
      QCOMPARE(p.iscrowd, int64_t{0});
      for (simdjson::dom::element poly : seg.get_array()) {
        Polygon xy;
        for (simdjson::dom::element v : poly.get_array())
          xy.push_back(number(v));
        QVERIFY2(xy.size() >= 6 && xy.size() % 2 == 0, "a polygon needs >= 3 points");
        for (size_t i = 0; i < xy.size(); ++i) {
          QVERIFY(xy[i] >= 0 && xy[i] <= (i % 2 == 0 ? w : h));  // inside the image
        }
        p.polygons.push_back(std::move(xy));
      }
      QVERIFY(!p.polygons.empty());
      p.rle = rleFromPolygons(p.polygons, h, w);
    } else {
      simdjson::dom::array size = seg["size"].get_array();
      QCOMPARE(int64_t(size.at(0)), image.height);
      QCOMPARE(int64_t(size.at(1)), image.width);
      simdjson::dom::element counts = seg["counts"];
      if (counts.is_string()) {
        p.kind = "rle";
        QCOMPARE(p.iscrowd, int64_t{0});
        p.rle = fromCompressedString(std::string_view(counts), h, w);
      } else {
        p.kind = "counts";
        QCOMPARE(p.iscrowd, int64_t{1});  // uncompressed RLE only for crowds, as in COCO
        p.rle = Rle{h, w, {}};
        for (simdjson::dom::element c : counts.get_array()) {
          p.rle.counts.push_back(static_cast<uint32_t>(int64_t(c)));
        }
      }
    }
    out.annotations.push_back(std::move(p));
  }
}

// A few thousand polygons meant to hit the rasteriser's corners: vertices off the image,
// collinear, repeated, sub-pixel, on the 0.1 grid where 5x + .5 rounding is tight, and unions.
void writeRandomPolygons(JsonWriter& json, int count) {
  std::mt19937_64 rng(12345);
  auto uniform = [&](double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1.0p-53;
  };
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  json.beginArray();
  for (int c = 0; c < count; ++c) {
    const auto h = static_cast<uint32_t>(pick(8) == 0 ? 1 + pick(300) : 1 + pick(48));
    const auto w = static_cast<uint32_t>(pick(8) == 0 ? 1 + pick(300) : 1 + pick(48));
    const int kind = pick(7);
    const int parts = pick(5) == 0 ? 2 + pick(3) : 1;
    std::vector<Polygon> polygons;
    for (int p = 0; p < parts; ++p) {
      const int n = 3 + pick(kind == 6 ? 40 : 8);
      const double cx = uniform(-0.2, 1.2) * w, cy = uniform(-0.2, 1.2) * h;
      const double ang = uniform(0, 6.3), step = uniform(0.1, 3);
      Polygon xy;
      for (int i = 0; i < n; ++i) {
        double x = 0, y = 0;
        switch (kind) {
          case 0:
            x = uniform(-10, w + 10.0);
            y = uniform(-10, h + 10.0);
            break;  // anywhere
          case 1:
            x = pick(static_cast<int>(w) + 6) - 3;
            y = pick(static_cast<int>(h) + 6) - 3;
            break;
          case 2:
            x = (pick(10 * static_cast<int>(w) + 40) - 20) / 10.0;  // 0.1 grid
            y = (pick(10 * static_cast<int>(h) + 40) - 20) / 10.0;
            break;
          case 3:
            x = cx + i * step * std::cos(ang);
            y = cy + i * step * std::sin(ang);
            break;  // collinear
          case 4:
            x = cx + uniform(0, 1);
            y = cy + uniform(0, 1);
            break;  // tiny
          case 5:   // repeated vertices
            x = i % 2 == 0 || xy.empty() ? uniform(-3, w + 3.0) : xy[xy.size() - 2];
            y = i % 2 == 0 || xy.empty() ? uniform(-3, h + 3.0) : xy[xy.size() - 1];
            break;
          default: {  // a star-like ring around a centre, with large spikes
            const double a = 6.283185307179586 * i / n, r = uniform(0.1, 0.8) * std::max(w, h);
            x = cx + r * std::cos(a);
            y = cy + r * std::sin(a);
          }
        }
        xy.push_back(x);
        xy.push_back(y);
      }
      polygons.push_back(std::move(xy));
    }
    const Rle rle = rleFromPolygons(polygons, h, w);
    json.beginObject().key("h").value(h).key("w").value(w).key("polygons").beginArray();
    for (const Polygon& p : polygons) {
      json.beginArray();
      for (double v : p)
        json.value(v);
      json.endArray();
    }
    json.endArray().key("counts").value(toCompressedString(rle)).key("area").value(area(rle));
    json.key("bbox").beginArray();
    for (double v : toBbox(rle))
      json.value(v);
    json.endArray().endObject();
  }
  json.endArray();
}

}  // namespace

class TestShapes : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QElapsedTimer timer;
    timer.start();
    summary_ = generateShapes(smallOptions(dir_));
    qInfo("generated 25 images in %lld ms", static_cast<long long>(timer.elapsed()));
    QVERIFY(summary_.generated);
    for (std::string_view split : kSplits) {
      ParsedSplit& parsed = split == "train" ? train_ : val_;
      parseSplit(shapesAnnotationFile(dir_.path().toStdString(), split), parsed);
      if (QTest::currentTestFailed()) return;
    }
  }

  // The same options must give the same bytes; a different seed different ones.
  void sameOptionsGiveIdenticalFiles() {
    QTemporaryDir other;
    QVERIFY(generateShapes(smallOptions(other)).generated);
    const auto a = snapshot(dir_.path().toStdString());
    const auto b = snapshot(other.path().toStdString());
    QCOMPARE(a.size(), size_t{25 + 3});
    QCOMPARE(a.size(), b.size());
    for (const auto& [name, bytes] : a) {
      QVERIFY2(b.count(name) == 1, name.c_str());
      QVERIFY2(b.at(name) == bytes, ("differs between runs: " + name).c_str());
    }
    QTemporaryDir reseeded;
    generateShapes(smallOptions(reseeded, 7));
    const auto c = snapshot(reseeded.path().toStdString());
    int differing = 0;
    for (const auto& [name, bytes] : a)
      differing += c.at(name) != bytes;
    QCOMPARE(differing, static_cast<int>(a.size()));  // every image, both jsons, the stamp
  }

  // An image must not depend on how many images came before it (per-image seed streams).
  void imagesDoNotDependOnGenerationOrder() {
    QTemporaryDir fewer;
    ShapesOptions o = smallOptions(fewer);
    o.train_images = 3;
    generateShapes(o);
    QCOMPARE(readAll(shapesImageDir(o.root, "val") / "000002.jpg"),
             readAll(shapesImageDir(dir_.path().toStdString(), "val") / "000002.jpg"));
    QCOMPARE(readAll(shapesImageDir(o.root, "train") / "000003.jpg"),
             readAll(shapesImageDir(dir_.path().toStdString(), "train") / "000003.jpg"));
  }

  void stampSkipsUpToDateOutput() {
    QTemporaryDir d;
    ShapesOptions o = smallOptions(d, 11);
    o.train_images = 4;
    o.val_images = 2;
    const ShapesSummary first = generateShapes(o);
    QVERIFY(first.generated);
    const fs::path image = shapesImageDir(o.root, "train") / "000002.jpg";
    const auto stamped = fs::last_write_time(image);

    const ShapesSummary again = generateShapes(o);
    QVERIFY(!again.generated);
    QVERIFY(again.train == first.train && again.val == first.val);  // read from the stamp
    QVERIFY(fs::last_write_time(image) == stamped);

    fs::remove(image);  // a missing file
    QVERIFY(generateShapes(o).generated);
    QVERIFY(fs::is_regular_file(image));
    QVERIFY(!generateShapes(o).generated);

    o.max_shapes = 3;  // other options
    QVERIFY(generateShapes(o).generated);
    QVERIFY(!generateShapes(o).generated);

    o.train_images = 2;  // fewer images: the extra ones go
    QVERIFY(generateShapes(o).generated);
    QVERIFY(!fs::exists(shapesImageDir(o.root, "train") / "000003.jpg"));
    for (const auto& e : fs::recursive_directory_iterator(o.root)) {
      QVERIFY2(e.path().extension() != ".tmp", e.path().c_str());
    }
  }

  void badOptionsAndUnwritableRootThrow() {
    QTemporaryDir d;
    ShapesOptions o = smallOptions(d);
    o.min_side = 400;  // > max_side
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, generateShapes(o));
    const fs::path file = fs::path(d.path().toStdString()) / "a_file";
    std::ofstream(file) << "x";
    o = smallOptions(d);
    o.root = file / "shapes";  // below a regular file
    try {
      generateShapes(o);
      QFAIL("no exception");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find(file.string()) != std::string::npos, e.what());
    }
  }

  void summaryMatchesJson() {
    for (const auto& [summary, parsed] :
         {std::pair{summary_.train, &train_}, std::pair{summary_.val, &val_}}) {
      QCOMPARE(summary.images, static_cast<int>(parsed->images.size()));
      QCOMPARE(summary.annotations, static_cast<int>(parsed->annotations.size()));
      int polygons = 0, rles = 0, crowds = 0;
      for (const ParsedAnnotation& a : parsed->annotations) {
        polygons += a.kind == "polygons";
        rles += a.kind == "rle";
        crowds += a.kind == "counts";
      }
      QCOMPARE(summary.polygons, polygons);
      QCOMPARE(summary.rles, rles);
      QCOMPARE(summary.crowds, crowds);
    }
    QCOMPARE(summary_.train.images, 20);
    QCOMPARE(summary_.val.images, 5);
  }

  // area and bbox are pycocotools' area and toBbox of the mask the segmentation decodes to;
  // that mask lies inside its image and inside its bbox.
  void areaAndBboxMatchTheDecodedMask() {
    int checked = 0;
    for (const ParsedSplit* parsed : {&train_, &val_}) {
      for (const ParsedAnnotation& a : parsed->annotations) {
        const ParsedImage& image = parsed->images.at(a.imageId);
        const cv::Mat mask = decodeMask(a.rle);  // throws unless the runs fill the image
        QCOMPARE(mask.rows, static_cast<int>(image.height));
        QCOMPARE(mask.cols, static_cast<int>(image.width));
        const int pixels = cv::countNonZero(mask);
        QVERIFY2(pixels >= 10, "an annotation with (almost) nothing in it");
        QCOMPARE(a.area, static_cast<double>(pixels));
        QCOMPARE(a.area, static_cast<double>(area(a.rle)));
        QVERIFY(a.bbox == toBbox(a.rle));
        const cv::Rect box(static_cast<int>(a.bbox[0]), static_cast<int>(a.bbox[1]),
                           static_cast<int>(a.bbox[2]), static_cast<int>(a.bbox[3]));
        QVERIFY(box.x >= 0 && box.y >= 0 && box.br().x <= mask.cols && box.br().y <= mask.rows);
        QCOMPARE(cv::countNonZero(mask(box)), pixels);
        // The bbox is tight: every edge row/column of it holds a mask pixel.
        QVERIFY(cv::countNonZero(mask(box).row(0)) > 0 &&
                cv::countNonZero(mask(box).row(box.height - 1)) > 0);
        QVERIFY(cv::countNonZero(mask(box).col(0)) > 0 &&
                cv::countNonZero(mask(box).col(box.width - 1)) > 0);
        ++checked;
      }
    }
    QVERIFY(checked > 50);
  }

  void mixOfEncodingsAndClasses() {
    const int total = summary_.train.annotations + summary_.val.annotations;
    const int rles = summary_.train.rles + summary_.val.rles;
    const int crowds = summary_.train.crowds + summary_.val.crowds;
    qInfo("%d annotations: %d polygons, %d rle, %d crowd", total,
          summary_.train.polygons + summary_.val.polygons, rles, crowds);
    QVERIFY(rles > 0 && crowds > 0);
    QVERIFY2(rles < total / 4, "RLE should be the exception, polygons the rule");
    QVERIFY(crowds < total / 10);
    std::set<int64_t> classes;
    for (const ParsedAnnotation& a : train_.annotations)
      classes.insert(a.categoryId);
    QVERIFY(classes.size() >= 4);
    // Visible regions broken into several pieces give multi-polygon annotations.
    int multi = 0;
    for (const ParsedAnnotation& a : train_.annotations)
      multi += a.polygons.size() > 1;
    qInfo("%d multi-polygon annotations in train", multi);
  }

  // The json annotates what stays visible of each painted shape; shapes occlude each other.
  void annotationsFollowVisibleRegions() {
    const ShapesOptions o = smallOptions(dir_);
    int occluded = 0, instances = 0;
    for (int i = 0; i < o.train_images; ++i) {
      const ShapesScene scene = renderShapesScene(o, "train", i);
      std::vector<const ParsedAnnotation*> anns;
      for (const ParsedAnnotation& a : train_.annotations) {
        if (a.imageId == i + 1) anns.push_back(&a);
      }
      QCOMPARE(anns.size(), scene.instances.size());
      cv::Mat covered(scene.image.size(), CV_8UC1, cv::Scalar(0));
      for (size_t k = 0; k < anns.size(); ++k) {
        const ShapesInstance& inst = scene.instances[k];
        QCOMPARE(anns[k]->categoryId, static_cast<int64_t>(inst.category_id));
        QCOMPARE(anns[k]->iscrowd, static_cast<int64_t>(inst.crowd));
        QCOMPARE(cv::countNonZero(inst.visible & ~inst.painted), 0);  // visible within painted
        QCOMPARE(cv::countNonZero(covered & inst.visible), 0);        // one owner per pixel
        covered |= inst.visible;
        const int visible = cv::countNonZero(inst.visible);
        occluded += visible < cv::countNonZero(inst.painted);
        ++instances;
        const cv::Mat annotated = decodeMask(anns[k]->rle);
        if (anns[k]->kind != "polygons") {
          QCOMPARE(cv::countNonZero(annotated != inst.visible), 0);  // exact
        } else {
          const int common = cv::countNonZero(annotated & inst.visible);
          const int either = cv::countNonZero(annotated | inst.visible);
          QVERIFY2(common >= 0.8 * either, "polygon far from the visible region");
        }
      }
    }
    qInfo("%d of %d instances occluded", occluded, instances);
    QVERIFY(occluded >= instances / 10);
  }

  // min_shape_size bounds every shape's size from below; clutter scales the background's
  // blobs, lines and arcs (measured as edges away from the shapes); categories limits the
  // classes drawn and listed; all are in the stamp.
  void difficultyOptions() {
    ShapesOptions big = smallOptions(dir_);
    big.min_side = 160;
    big.min_shape_size = 40;
    int smallest = 1 << 30;
    for (int i = 0; i < 20; ++i) {
      for (const ShapesInstance& inst : renderShapesScene(big, "train", i).instances) {
        if (inst.crowd) continue;
        const cv::Rect box = cv::boundingRect(inst.painted);
        smallest = std::min(smallest, std::max(box.width, box.height));
      }
    }
    qInfo("min_shape_size 40: the smallest painted shape spans %d px", smallest);
    QVERIFY(smallest >= 0.6 * 40);  // a triangle's span is ~0.87 of its circumscribed diameter

    // Edge pixels outside every painted shape, over 20 images.
    auto clutterEdges = [](const ShapesOptions& o) {
      int64_t edges = 0;
      for (int i = 0; i < 20; ++i) {
        const ShapesScene scene = renderShapesScene(o, "train", i);
        cv::Mat gray, smooth, edgeMap;
        cv::cvtColor(scene.image, gray, cv::COLOR_BGR2GRAY);
        cv::GaussianBlur(gray, smooth, cv::Size(5, 5), 1.5);
        cv::Canny(smooth, edgeMap, 40, 80);
        cv::Mat shapes(gray.size(), CV_8UC1, cv::Scalar(0));
        for (const ShapesInstance& inst : scene.instances)
          shapes |= inst.painted;
        cv::dilate(shapes, shapes, cv::Mat(), cv::Point(-1, -1), 3);
        edges += cv::countNonZero(edgeMap & (shapes == 0));
      }
      return edges;
    };
    ShapesOptions none = smallOptions(dir_), usual = none, twice = none;
    none.clutter = 0;
    twice.clutter = 2;
    const int64_t e0 = clutterEdges(none), e1 = clutterEdges(usual), e2 = clutterEdges(twice);
    qInfo("background edge pixels, clutter 0 / 1 / 2: %lld / %lld / %lld",
          static_cast<long long>(e0), static_cast<long long>(e1), static_cast<long long>(e2));
    QVERIFY(e0 * 4 < e1);
    QVERIFY(e1 * 5 < e2 * 4);

    QTemporaryDir d;
    ShapesOptions o = smallOptions(d);
    o.train_images = 2;
    o.val_images = 1;
    QVERIFY(generateShapes(o).generated);
    QVERIFY(!generateShapes(o).generated);
    o.clutter = 0.5;
    QVERIFY(generateShapes(o).generated);
    o.min_shape_size = 20;
    QVERIFY(generateShapes(o).generated);
    QVERIFY(!generateShapes(o).generated);
    o.categories = 3;
    o.train_images = 20;
    QVERIFY(generateShapes(o).generated);
    const std::string json = readAll(shapesAnnotationFile(o.root, "train"));
    QVERIFY(json.find("\"triangle\"") != std::string::npos);
    QVERIFY(json.find("\"star\"") == std::string::npos);
    std::set<int> drawn;
    for (int i = 0; i < o.train_images; ++i) {
      for (const ShapesInstance& inst : renderShapesScene(o, "train", i).instances)
        drawn.insert(inst.category_id);
    }
    QCOMPARE(drawn, (std::set<int>{1, 2, 3}));
    o.categories = 7;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, generateShapes(o));
    o.categories = 6;
    o.min_shape_size = 3;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, generateShapes(o));
    o.min_shape_size = 12;
    o.clutter = -1;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, generateShapes(o));
  }

  // Parity with pycocotools: every annotation, and thousands of random polygons.
  void pycocotoolsAgrees() {
    const QString python = qEnvironmentVariable("MRCNN_PYTHON");
    if (python.isEmpty()) {
      QSKIP("MRCNN_PYTHON is not set (run through ctest): no pycocotools to compare with");
    }
    // Set but missing means a broken environment, which must not pass as a skip.
    QVERIFY2(QFileInfo::exists(python),
             qPrintable("MRCNN_PYTHON does not exist: " + python + " (run scripts/setup.sh)"));
    const QString script = qEnvironmentVariable("MRCNN_SOURCE_DIR") +
                           "/tests/dataset/check_shapes_with_pycocotools.py";
    QVERIFY2(QFileInfo::exists(script), qPrintable(script));

    constexpr int kRandomPolygons = 4000;
    const fs::path cppJson = fs::path(dir_.path().toStdString()) / "cpp_rles.json";
    {
      std::ofstream out(cppJson);
      JsonWriter json(out);
      json.beginObject().key("annotations").beginObject();
      for (std::string_view split : kSplits) {
        json.key(split).beginObject();
        for (const ParsedAnnotation& a : (split == "train" ? train_ : val_).annotations) {
          json.key(std::to_string(a.id)).value(toCompressedString(a.rle));
        }
        json.endObject();
      }
      json.endObject().key("polygons");
      writeRandomPolygons(json, kRandomPolygons);
      json.endObject();
      QVERIFY(json.complete());
    }
    QElapsedTimer timer;
    timer.start();
    QProcess process;
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(python, {script, dir_.path(), QString::fromStdString(cppJson.string())});
    QVERIFY2(process.waitForFinished(300000), "the pycocotools check timed out");
    const QString output = QString::fromUtf8(process.readAll());
    qInfo("pycocotools check: %lld ms", static_cast<long long>(timer.elapsed()));
    const auto match =
        QRegularExpression(R"(RESULT annotations=(\d+) polygons=(\d+))").match(output);
    QVERIFY2(
        process.exitStatus() == QProcess::NormalExit && process.exitCode() == 0 && match.hasMatch(),
        qPrintable(output.right(6000)));
    qInfo("%s", qPrintable(match.captured(0)));
    QCOMPARE(match.captured(1).toInt(), summary_.train.annotations + summary_.val.annotations);
    QCOMPARE(match.captured(2).toInt(), kRandomPolygons);
  }

 private:
  QTemporaryDir dir_;
  ShapesSummary summary_;
  ParsedSplit train_, val_;
};

QTEST_GUILESS_MAIN(TestShapes)
#include "test_shapes.moc"

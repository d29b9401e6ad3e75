// dataset_convert: a copy of tinycoco with planted faults converted and checked problem by
// problem, the clean val split read back mask for mask, and the task end to end through the
// binaries (names, tags, shard counts, exit codes). Its parts (checksum, mask extent, image
// checks, shard format): test_shards.cpp.
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
#include "dataset/convert/mask_extent.h"
#include "dataset/convert/shard.h"
#include "dataset/image/image_check.h"
#include "dataset/mask/rle.h"
#include "tests/common/files.h"
#include "tests/common/process_run.h"

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

using mrcnn::testing::writeAll;

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

using mrcnn::testing::filesIn;

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

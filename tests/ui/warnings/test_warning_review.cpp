// The warning review on a planted-faults copy of tinycoco converted by dataset_convert (the
// faults of tests/dataset/test_convert.cpp): both files fill the list grouped by kind and
// image as the files say; selecting an entry loads its image with the annotation at fault
// highlighted where its box is, beyond the image's bounds too (pixels checked); review marks
// persist beside the report; the corrected copy changes exactly the chosen annotations and
// never overwrites the original.
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "dataset/convert/dataset_convert.h"
#include "ui/common/image_view.h"
#include "ui/common/overlay.h"
#include "ui/warnings/corrected_copy.h"
#include "ui/warnings/warning_report.h"
#include "ui/warnings/warning_review.h"

using namespace mrcnn::ui;
namespace fs = std::filesystem;

namespace {

fs::path tinycoco() {
  return fs::path(qEnvironmentVariable("MRCNN_SHARED_DIR").toStdString()) / "data/tinycoco";
}

QByteArray readFile(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void writeFile(const fs::path& path, const QByteArray& bytes) {
  QFile f(QString::fromStdString(path.string()));
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(bytes);
}

// The faults planted, as in tests/dataset/test_convert.cpp.
constexpr int64_t kOutOfBoundsImage = 471345;
constexpr int64_t kOutOfBounds = 671091;   // x moved so that x + w > 640
constexpr int64_t kZeroWidth = 84596;      // w = 0
constexpr int64_t kNegativeWidth = 95083;  // w = -5: the reader skips it
constexpr int64_t kMaskOutside = 468698;   // bbox shrunk by 5 on each side
constexpr int64_t kUnknownCategory = 541750;

struct Dirty {
  QString json;
  QString images;
  QString report;
  QString warnings;
};

// tinycoco's val split with faults planted in a temporary folder, converted.
Dirty makeDirty(const QTemporaryDir& dir) {
  const fs::path root = dir.path().toStdString();
  const fs::path images = root / "images";
  fs::create_directories(images);
  for (const auto& e : fs::directory_iterator(tinycoco() / "images/val2017")) {
    const std::string name = e.path().filename().string();
    if (name == "000000444010.jpg") continue;  // missing
    QByteArray bytes = readFile(QString::fromStdString(e.path().string()));
    if (name == "000000565004.jpg") bytes.truncate(bytes.size() * 6 / 10);  // truncated
    writeFile(images / name, bytes);
  }
  QJsonObject doc =
      QJsonDocument::fromJson(readFile(QString::fromStdString(
                                  (tinycoco() / "annotations/instances_val2017.json").string())))
          .object();
  QJsonArray anns = doc["annotations"].toArray();
  for (qsizetype i = 0; i < anns.size(); ++i) {
    QJsonObject a = anns[i].toObject();
    QJsonArray bbox = a["bbox"].toArray();
    const int64_t id = a["id"].toInteger();
    if (id == kOutOfBounds) bbox[0] = 640 - bbox[2].toDouble() / 2;
    if (id == kZeroWidth) bbox[2] = 0;
    if (id == kNegativeWidth) bbox[2] = -5;
    if (id == kMaskOutside)
      bbox = QJsonArray{bbox[0].toDouble() + 5, bbox[1].toDouble() + 5, bbox[2].toDouble() - 10,
                        bbox[3].toDouble() - 10};
    if (id == kUnknownCategory) a["category_id"] = 999;
    a["bbox"] = bbox;
    anns[i] = a;
  }
  doc["annotations"] = anns;
  const fs::path json = root / "dirty.json";
  writeFile(json, QJsonDocument(doc).toJson(QJsonDocument::Indented));
  mrcnn::dataset::ConvertOptions options;
  options.image_dir = images;
  options.annotations = json;
  options.output_dir = root / "out";
  options.num_shards = 1;
  options.threads = 1;
  const auto result = mrcnn::dataset::convertDataset(options);
  return {QString::fromStdString(json.string()), QString::fromStdString(images.string()),
          QString::fromStdString(result.report_path.string()),
          QString::fromStdString(result.warnings_path.string())};
}

int channelDistance(QRgb a, QRgb b) {
  return std::max({std::abs(qRed(a) - qRed(b)), std::abs(qGreen(a) - qGreen(b)),
                   std::abs(qBlue(a) - qBlue(b))});
}

// kind -> image label -> entries, read from the tree.
std::map<QString, std::map<QString, int>> treeShape(QTreeWidget* tree) {
  std::map<QString, std::map<QString, int>> shape;
  for (int k = 0; k < tree->topLevelItemCount(); ++k) {
    QTreeWidgetItem* kind = tree->topLevelItem(k);
    for (int i = 0; i < kind->childCount(); ++i)
      shape[kind->text(0)][kind->child(i)->text(0)] = kind->child(i)->childCount();
  }
  return shape;
}

int indexOf(const WarningReport& report, const QString& kind, int64_t annotation) {
  for (size_t i = 0; i < report.entries.size(); ++i)
    if (report.entries[i].kind == kind && report.entries[i].annotation_id == annotation)
      return static_cast<int>(i);
  return -1;
}

}  // namespace

class WarningReviewTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  Dirty dirty_;

 private slots:
  void initTestCase() {
    if (!fs::exists(tinycoco())) QSKIP("tinycoco is not there (MRCNN_SHARED_DIR)");
    QVERIFY(dir_.isValid());
    dirty_ = makeDirty(dir_);
    QVERIFY(QFile::exists(dirty_.report));
    QVERIFY(QFile::exists(dirty_.warnings));
  }

  // The report's problems, grouped by kind then image, exactly as the file lists them.
  void reportFillsTheListGroupedByKindAndImage() {
    const QJsonArray problems =
        QJsonDocument::fromJson(readFile(dirty_.report)).object()["problems"].toArray();
    std::map<QString, std::map<QString, int>> expected;  // kind -> image id -> count
    for (const QJsonValue& p : problems) {
      const QJsonValue image = p["image_id"];
      expected[p["kind"].toString()][image.isNull() ? "-" : QString::number(image.toInteger())]++;
    }
    QVERIFY(expected.contains("box_out_of_bounds"));
    QVERIFY(expected.contains("image_missing"));
    WarningReview review;
    QSignalSpy loaded(&review, &WarningReview::reportLoaded);
    review.openReport(dirty_.report, dirty_.json, dirty_.images);
    QVERIFY(loaded.wait(20000));
    QVERIFY(loaded.first().at(0).toBool());
    QCOMPARE(review.report().entries.size(), static_cast<size_t>(problems.size()));
    const auto shape = treeShape(review.tree());
    QCOMPARE(shape.size(), expected.size());
    for (const auto& [kind, images] : expected) {
      const QString title = kindTitle(kind) + QStringLiteral(" — ");
      auto it = std::find_if(shape.begin(), shape.end(),
                             [&](const auto& s) { return s.first.startsWith(title); });
      QVERIFY2(it != shape.end(), qPrintable(kind));
      QCOMPARE(it->second.size(), images.size());
      for (const auto& [image, count] : images) {
        auto found = std::find_if(it->second.begin(), it->second.end(), [&](const auto& s) {
          return image == "-" || s.first.contains(QStringLiteral("id ") + image) ||
                 s.first.contains(QStringLiteral("image ") + image);
        });
        QVERIFY2(found != it->second.end(), qPrintable(kind + " " + image));
        QCOMPARE(found->second, count);
      }
    }
  }

  // TAO's file: box and mask warnings by image.
  void taoWarningsFillTheList() {
    const QJsonObject tao = QJsonDocument::fromJson(readFile(dirty_.warnings)).object();
    int boxes = 0, masks = 0;
    for (const QJsonValue& v : tao) {
      boxes += static_cast<int>(v["box"].toArray().size());
      masks += static_cast<int>(v["mask"].toArray().size());
    }
    QVERIFY(boxes >= 3 && masks >= 1);
    WarningReview review;
    QSignalSpy loaded(&review, &WarningReview::reportLoaded);
    review.openReport(dirty_.warnings, dirty_.json, dirty_.images);
    QVERIFY(loaded.wait(20000));
    QVERIFY(review.report().tao_format);
    const auto shape = treeShape(review.tree());
    int shown_boxes = 0, shown_masks = 0;
    for (const auto& [kind, images] : shape)
      for (const auto& [image, n] : images)
        (kind.startsWith(kindTitle("tao_box")) ? shown_boxes : shown_masks) += n;
    QCOMPARE(shown_boxes, boxes);
    QCOMPARE(shown_masks, masks);
    QVERIFY(indexOf(review.report(), "tao_box", kOutOfBounds) >= 0);
    QVERIFY(indexOf(review.report(), "tao_mask", kMaskOutside) >= 0);
  }

  // The box out of bounds: its image, and its box drawn in the highlight colour on all four
  // edges, the right one beyond the image's right edge, where the image is not.
  void selectionShowsTheImageWithTheBoxHighlighted() {
    WarningReview review;
    review.resize(1200, 800);
    review.show();
    QSignalSpy loaded(&review, &WarningReview::reportLoaded);
    review.openReport(dirty_.report, dirty_.json, dirty_.images);
    QVERIFY(loaded.wait(20000));
    const int index = indexOf(review.report(), "box_out_of_bounds", kOutOfBounds);
    QVERIFY(index >= 0);
    QSignalSpy shown(&review, &WarningReview::entryShown);
    QVERIFY(review.selectEntry(index));
    QVERIFY(shown.wait(20000));
    QCOMPARE(shown.last().at(0).toInt(), index);
    ImageView* view = review.imageView();
    const QImage photo =
        QImage(dirty_.images + "/000000471345.jpg").convertToFormat(QImage::Format_RGB32);
    QCOMPARE(view->image().convertToFormat(QImage::Format_RGB32), photo);
    // The box from the dirty json.
    QRectF box;
    for (const QJsonValue& a :
         QJsonDocument::fromJson(readFile(dirty_.json)).object()["annotations"].toArray())
      if (a["id"].toInteger() == kOutOfBounds)
        box = QRectF(a["bbox"][0].toDouble(), a["bbox"][1].toDouble(), a["bbox"][2].toDouble(),
                     a["bbox"][3].toDouble());
    QVERIFY(box.right() > 640);
    int highlighted = 0;
    for (const OverlayInstance& i : view->instances()) {
      if (!i.highlight) continue;
      ++highlighted;
      QCOMPARE(i.id, kOutOfBounds);
      QCOMPARE(i.box, box);
    }
    QCOMPARE(highlighted, 1);
    const QRectF frame = view->sceneFrame();
    QVERIFY(frame.contains(box));
    const QImage scene = view->renderScene();
    const auto at = [&](double x, double y) {
      return scene.pixel(static_cast<int>(std::floor(x - frame.left())),
                         static_cast<int>(std::floor(y - frame.top())));
    };
    const QRgb red = highlightColour().rgb();
    const double mid_y = box.center().y();
    QVERIFY2(channelDistance(at(box.left(), mid_y), red) <= 40, "left edge");
    QVERIFY2(channelDistance(at(box.right(), mid_y), red) <= 40, "right edge, outside the image");
    // (Its middle is on the image's right edge, where the image's bounds are drawn.)
    QVERIFY2(channelDistance(at(box.left() + box.width() / 4, box.bottom()), red) <= 40,
             "bottom edge");
    // Beyond the image and off the box's edges: the view's background, not the photo.
    const QRgb outside = at(box.right() - 4, box.bottom() + 6);
    QCOMPARE(outside, view->backgroundBrush().color().rgb());
  }

  // The annotation the reader skips (negative width) still shows, from the file's box.
  void skippedAnnotationShowsFromTheFile() {
    WarningReview review;
    QSignalSpy loaded(&review, &WarningReview::reportLoaded);
    review.openReport(dirty_.report, dirty_.json, dirty_.images);
    QVERIFY(loaded.wait(20000));
    int index = -1;
    for (size_t i = 0; i < review.report().entries.size(); ++i)
      if (review.report().entries[i].annotation_id == kNegativeWidth) index = static_cast<int>(i);
    QVERIFY(index >= 0);
    QSignalSpy shown(&review, &WarningReview::entryShown);
    review.selectEntry(index);
    QVERIFY(shown.wait(20000));
    bool found = false;
    for (const OverlayInstance& i : review.imageView()->instances())
      if (i.highlight && i.id == kNegativeWidth) found = i.box.width() == -5;
    QVERIFY(found);
  }

  void reviewMarksPersistBesideTheReport() {
    QFile::remove(reviewedPath(dirty_.report));
    {
      WarningReview review;
      QSignalSpy loaded(&review, &WarningReview::reportLoaded);
      review.openReport(dirty_.report, dirty_.json, dirty_.images);
      QVERIFY(loaded.wait(20000));
      review.setReviewed(0, true);
      review.setReviewed(2, true);
      review.setReviewed(2, false);
      review.setReviewed(3, true);
      QVERIFY(QFile::exists(reviewedPath(dirty_.report)));
    }
    WarningReview again;
    QSignalSpy loaded(&again, &WarningReview::reportLoaded);
    again.openReport(dirty_.report, dirty_.json, dirty_.images);
    QVERIFY(loaded.wait(20000));
    for (int i = 0; i < static_cast<int>(again.report().entries.size()); ++i)
      QCOMPARE(again.isReviewed(i), i == 0 || i == 3);
    // The tree's check boxes show them, and checking one there marks it.
    QTreeWidgetItem* item = nullptr;
    for (QTreeWidgetItemIterator it(again.tree()); *it; ++it)
      if ((*it)->data(0, Qt::UserRole + 1).isValid() &&
          (*it)->data(0, Qt::UserRole + 1).toInt() == 1)
        item = *it;
    QVERIFY(item);
    QCOMPARE(item->checkState(0), Qt::Unchecked);
    item->setCheckState(0, Qt::Checked);
    QVERIFY(again.isReviewed(1));
    QVERIFY(readReviewed(dirty_.report).contains(again.report().entries[1].key()));
  }

  // Dropping one annotation and clipping another: the copy differs from the original in
  // exactly those, every other value equal; the original is untouched and cannot be the
  // output.
  void correctedCopyChangesOnlyWhatWasChosen() {
    WarningReview review;
    QSignalSpy loaded(&review, &WarningReview::reportLoaded);
    review.openReport(dirty_.report, dirty_.json, dirty_.images);
    QVERIFY(loaded.wait(20000));
    const QByteArray original = readFile(dirty_.json);
    const int zero = indexOf(review.report(), "bad_bbox", kZeroWidth);
    const int out = indexOf(review.report(), "box_out_of_bounds", kOutOfBounds);
    QVERIFY(zero >= 0 && out >= 0);
    review.setFix(zero, WarningReview::Fix::Drop);
    review.setFix(out, WarningReview::Fix::Clip);
    QCOMPARE(review.fix(out), WarningReview::Fix::Clip);
    // Refused: the original itself, also through another spelling of its path.
    QString message;
    QVERIFY(!review.exportCorrected(dirty_.json, &message));
    QVERIFY(message.contains("refusing"));
    QVERIFY(!review.exportCorrected(dirty_.images + "/../dirty.json", &message));
    QCOMPARE(readFile(dirty_.json), original);

    const QString copy = dir_.filePath("corrected.json");
    QVERIFY2(review.exportCorrected(copy, &message), qPrintable(message));
    QCOMPARE(readFile(dirty_.json), original);
    const QJsonObject before = QJsonDocument::fromJson(original).object();
    const QJsonObject after = QJsonDocument::fromJson(readFile(copy)).object();
    QVERIFY(!after.isEmpty());
    QCOMPARE(after.keys(), before.keys());
    for (const QString& key : before.keys())
      if (key != "annotations") QCOMPARE(after[key], before[key]);
    const QJsonArray a0 = before["annotations"].toArray(), a1 = after["annotations"].toArray();
    QCOMPARE(a1.size(), a0.size() - 1);
    qsizetype j = 0;
    for (qsizetype i = 0; i < a0.size(); ++i) {
      const QJsonObject o = a0[i].toObject();
      if (o["id"].toInteger() == kZeroWidth) continue;
      QJsonObject c = a1[j++].toObject();
      if (o["id"].toInteger() == kOutOfBounds) {
        const QJsonArray b = o["bbox"].toArray(), cb = c["bbox"].toArray();
        QCOMPARE(cb[0].toDouble(), b[0].toDouble());
        QCOMPARE(cb[1].toDouble(), b[1].toDouble());
        QCOMPARE(cb[2].toDouble(), 640 - b[0].toDouble());
        QCOMPARE(cb[3].toDouble(), b[3].toDouble());
        c["bbox"] = b;  // the rest of it unchanged
      }
      QCOMPARE(c, o);
    }
    QCOMPARE(j, a1.size());
    // Byte for byte: the copy is the original without the dropped object and with one
    // number of one bbox respelled; same length up to those edits.
    const qsizetype dropped_begin = original.indexOf("\"id\": 84596");
    QVERIFY(dropped_begin > 0);
    const QByteArray copied = readFile(copy);
    QCOMPARE(copied.left(original.indexOf("\"annotations\"")),
             original.left(original.indexOf("\"annotations\"")));
    QCOMPARE(copied.mid(copied.indexOf("\"categories\"")),
             original.mid(original.indexOf("\"categories\"")));
  }

  // The scanner on its own: a malformed file is named with the byte at fault; ids asked for
  // that the file lacks are reported.
  void correctionReportsFaultsAndUnknownIds() {
    AnnotationCorrections c;
    c.drop = {7};
    try {
      correctAnnotations(R"({"images": [], "annotations": [{"id": 1, "bbox": [1, 2, 3}]})", c,
                         "x.json");
      QFAIL("no error");
    } catch (const CorrectionError& e) {
      QVERIFY2(QString(e.what()).startsWith("x.json: byte "), e.what());
    }
    CorrectionSummary s;
    const std::string text =
        R"({"images": [{"id": 1, "width": 10, "height": 8}],)"
        R"( "annotations": [{"id": 1, "image_id": 1, "bbox": [-2.5, 1, 20, 3]},)"
        R"( {"id": 2, "image_id": 1, "bbox": [1, 1, 2, 2]}], "x": 1})";
    c.drop = {2, 7};
    c.clip = {1};
    const std::string out = correctAnnotations(text, c, "y.json", &s);
    QCOMPARE(
        QString::fromStdString(out),
        QString(R"({"images": [{"id": 1, "width": 10, "height": 8}],)"
                R"( "annotations": [{"id": 1, "image_id": 1, "bbox": [0.0, 1, 10, 3]}], "x": 1})"));
    QCOMPARE(s.not_found, std::vector<int64_t>{7});
    QCOMPARE(s.clipped, std::vector<int64_t>{1});
    QCOMPARE(s.dropped, std::vector<int64_t>{2});
  }

  // docs/screenshots/warnings.png when MRCNN_SCREENSHOTS names a folder: the planted-faults
  // copy's report, the box out of bounds selected.
  void screenshot() {
    const QString out = qEnvironmentVariable("MRCNN_SCREENSHOTS");
    if (out.isEmpty()) QSKIP("set MRCNN_SCREENSHOTS to a folder to write the screenshot");
    QFile::remove(reviewedPath(dirty_.report));
    WarningReview review;
    review.resize(1400, 860);
    review.show();
    QSignalSpy loaded(&review, &WarningReview::reportLoaded);
    review.openReport(dirty_.report, dirty_.json, dirty_.images);
    QVERIFY(loaded.wait(20000));
    review.setReviewed(indexOf(review.report(), "bad_bbox", kZeroWidth), true);
    review.setFix(indexOf(review.report(), "bad_bbox", kZeroWidth), WarningReview::Fix::Drop);
    const int index = indexOf(review.report(), "box_out_of_bounds", kOutOfBounds);
    review.setFix(index, WarningReview::Fix::Clip);
    QSignalSpy shown(&review, &WarningReview::entryShown);
    review.selectEntry(index);
    QVERIFY(shown.wait(20000));
    QTest::qWait(200);
    QVERIFY(review.grab().save(out + "/warnings.png"));
  }
};

QTEST_MAIN(WarningReviewTest)
#include "test_warning_review.moc"

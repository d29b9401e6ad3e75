// The dataset browser on real data (tinycoco): it opens and shows the images with their
// thumbnails, the filters narrow the grid to the images the json says, a selected image has
// its masks painted where the masks are (pixels checked against masks rasterised here, and
// against the image without overlay), crowd regions are hatched, and a 5,000-image dataset
// opens while the event loop keeps turning.
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QImageReader>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QListView>
#include <QListWidget>
#include <QPalette>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>
#include <map>
#include <numeric>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <set>

#include "dataset/mask/rle.h"
#include "ui/common/image_file.h"
#include "ui/common/image_view.h"
#include "ui/common/layer_controls.h"
#include "ui/common/overlay.h"
#include "ui/annotation_editor/annotation_editor.h"
#include "ui/dataset_browser/dataset_browser.h"
#include "ui/dataset_browser/dataset_stats_view.h"
#include "ui/dataset_browser/image_list_model.h"

using namespace mrcnn::ui;
namespace ds = mrcnn::dataset;

namespace {

QString tinycoco() {
  return qEnvironmentVariable("MRCNN_SHARED_DIR") + "/data/tinycoco";
}
QString valJson() {
  return tinycoco() + "/annotations/instances_val2017.json";
}
QString valImages() {
  return tinycoco() + "/images/val2017";
}

QJsonObject readJson(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

// The annotation's mask rasterised here from the json, as pycocotools' annToRLE gives it.
cv::Mat maskOf(const QJsonObject& a, int h, int w) {
  const QJsonValue seg = a["segmentation"];
  ds::Rle rle;
  if (seg.isArray()) {
    std::vector<ds::Polygon> polygons;
    for (const QJsonValue& p : seg.toArray()) {
      ds::Polygon poly;
      for (const QJsonValue& v : p.toArray())
        poly.push_back(v.toDouble());
      polygons.push_back(std::move(poly));
    }
    rle = ds::rleFromPolygons(polygons, static_cast<uint32_t>(h), static_cast<uint32_t>(w));
  } else {
    const QJsonObject o = seg.toObject();
    std::vector<int64_t> counts;
    for (const QJsonValue& v : o["counts"].toArray())
      counts.push_back(v.toInteger());
    rle = ds::rleFromUncompressed(counts, static_cast<uint32_t>(o["size"][0].toInt()),
                                  static_cast<uint32_t>(o["size"][1].toInt()));
  }
  return ds::decodeMask(rle);
}

bool waitFor(const std::function<bool()>& done, int ms = 20000) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > ms) return false;
    QTest::qWait(10);
  }
  return true;
}

int channelDistance(QRgb a, QRgb b) {
  return std::max({std::abs(qRed(a) - qRed(b)), std::abs(qGreen(a) - qGreen(b)),
                   std::abs(qBlue(a) - qBlue(b))});
}

}  // namespace

class DatasetBrowserTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    if (!QFile::exists(valJson())) QSKIP("tinycoco is not there (MRCNN_SHARED_DIR)");
  }

  // Overlay painting without widgets: a mask tinted at the opacity asked, nothing outside it,
  // boxes on their edges, hidden layers not painted, crowd regions in two stripes.
  void overlayPaintsMasksBoxesAndHatching() {
    QImage base(40, 30, QImage::Format_RGB32);
    base.fill(QColor(10, 20, 30));
    cv::Mat mask(30, 40, CV_8UC1, cv::Scalar(0));
    mask(cv::Rect(5, 5, 10, 8)).setTo(1);
    OverlayInstance instance;
    instance.colour = QColor(200, 100, 0);
    instance.box = QRectF(20, 10, 15, 12);
    setMask(instance, mask);
    QCOMPARE(instance.mask_origin, QPoint(5, 5));
    QCOMPARE(instance.mask.size(), QSize(10, 8));
    OverlayLayers layers;
    layers.labels = false;
    layers.mask_opacity = 0.5;
    std::vector<OverlayInstance> list{instance};
    QImage out = renderOverlay(base, list, layers);
    // Inside the mask (away from its outline): half base, half colour.
    QVERIFY(channelDistance(out.pixel(9, 8), qRgb(105, 60, 15)) <= 2);
    QCOMPARE(out.pixel(2, 2), base.pixel(2, 2));
    // The outline runs on the mask's edge pixels, never outside them.
    for (int y = 3; y < 16; ++y) {
      QCOMPARE(out.pixel(4, y), base.pixel(4, y));
      QCOMPARE(out.pixel(15, y), base.pixel(15, y));
    }
    for (int x = 3; x < 18; ++x) {
      QCOMPARE(out.pixel(x, 4), base.pixel(x, 4));
      QCOMPARE(out.pixel(x, 13), base.pixel(x, 13));
    }
    QCOMPARE(out.pixel(5, 8), qRgb(200, 100, 0));
    QCOMPARE(out.pixel(14, 8), qRgb(200, 100, 0));
    QCOMPARE(out.pixel(9, 12), qRgb(200, 100, 0));
    // The box's left edge, and a pixel inside the box but off the edges, untouched.
    QVERIFY(channelDistance(out.pixel(20, 15), qRgb(200, 100, 0)) <= 2);
    QCOMPARE(out.pixel(27, 16), base.pixel(27, 16));
    layers.masks = false;
    layers.boxes = false;
    out = renderOverlay(base, list, layers);
    QCOMPARE(out.pixel(9, 8), base.pixel(9, 8));
    QCOMPARE(out.pixel(20, 15), base.pixel(20, 15));
    // Crowd: stripes of two alphas; and the crowd layer off hides it.
    list[0].crowd = true;
    setMask(list[0], mask);
    std::set<int> alphas;
    for (int y = 0; y < list[0].mask.height(); ++y)
      for (int x = 0; x < list[0].mask.width(); ++x)
        alphas.insert(qAlpha(list[0].mask.pixel(x, y)));
    QCOMPARE(alphas.size(), size_t(2));
    layers.masks = true;
    layers.crowd = false;
    out = renderOverlay(base, list, layers);
    QCOMPARE(out.pixel(9, 8), base.pixel(9, 8));
  }

  void opensTinycocoAndShowsItsImages() {
    const QJsonObject json = readJson(valJson());
    DatasetBrowser browser;
    browser.resize(1200, 800);
    browser.show();
    QSignalSpy loaded(&browser, &DatasetBrowser::datasetLoaded);
    browser.openDataset(valJson(), valImages());
    QVERIFY(loaded.wait(20000));
    QCOMPARE(loaded.first().at(0).toBool(), true);
    ImageListModel* model = browser.model();
    QCOMPARE(model->rowCount(), json["images"].toArray().size());
    // Every row names its file, and its thumbnail arrives decoded from that file.
    std::set<QString> names;
    for (const QJsonValue& v : json["images"].toArray())
      names.insert(v.toObject()["file_name"].toString());
    for (int row = 0; row < model->rowCount(); ++row)
      QVERIFY(names.contains(model->index(row).data().toString()));
    QVERIFY(waitFor([&] {
      for (int row = 0; row < model->rowCount(); ++row)
        if (model->index(row).data(ImageListModel::ThumbnailRole).value<QImage>().isNull())
          return false;
      return true;
    }));
    // The grid's icons all have the icon size (thumbnails centred), so rows line up.
    QCOMPARE(model->index(0).data(Qt::DecorationRole).value<QImage>().size(), QSize(160, 120));
    const QImage thumb = model->index(0).data(ImageListModel::ThumbnailRole).value<QImage>();
    QVERIFY(thumb.width() <= 160 && thumb.height() <= 120);
    QVERIFY(thumb.width() == 160 || thumb.height() == 120);
    // The thumbnail is the picture: compare with the file scaled down here.
    QImage full(model->index(0).data(ImageListModel::PathRole).toString());
    const QImage small = full.scaled(thumb.size(), Qt::IgnoreAspectRatio, Qt::SmoothTransformation)
                             .convertToFormat(QImage::Format_RGB32);
    double diff = 0;
    for (int y = 0; y < thumb.height(); ++y)
      for (int x = 0; x < thumb.width(); ++x)
        diff += channelDistance(thumb.pixel(x, y), small.pixel(x, y));
    QVERIFY2(
        diff / (thumb.width() * thumb.height()) < 12,
        qPrintable(QString("mean difference %1").arg(diff / (thumb.width() * thumb.height()))));
  }

  // Editing in the browser: an instance deleted in the editor is gone from the view once
  // the editor closes, the change is in the file's journal (the file untouched), and the
  // browser opened on the file again shows it edited.
  void editingAnImageIsJournalledAndShown() {
    QTemporaryDir dir;
    const QString json = dir.filePath("val.json");
    QVERIFY(QFile::copy(valJson(), json));
    const QByteArray original = [&] {
      QFile f(json);
      return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    }();
    DatasetBrowser browser;
    browser.resize(1200, 800);
    browser.show();
    QSignalSpy loaded(&browser, &DatasetBrowser::datasetLoaded);
    QSignalSpy shown(&browser, &DatasetBrowser::imageShown);
    browser.openDataset(json, valImages());
    QVERIFY(loaded.wait(20000));
    browser.grid()->setCurrentIndex(browser.model()->index(0));
    QVERIFY(shown.wait(20000));
    const size_t before = browser.imageView()->instances().size();
    QVERIFY(before > 1);
    browser.setEditing(true);
    QVERIFY(browser.editing());
    QVERIFY(browser.edits());
    const int64_t image = browser.currentImageId();
    const int64_t victim = browser.edits()->ofImage(image).front()->id;
    browser.editor()->select(victim);
    QTest::keyClick(browser.editor(), Qt::Key_Delete);
    QVERIFY(!browser.edits()->find(victim));
    shown.clear();
    browser.setEditing(false);
    QVERIFY(!browser.editing());
    QVERIFY(shown.wait(20000));
    QCOMPARE(browser.imageView()->instances().size(), before - 1);
    QVERIFY(QFile::exists(dir.filePath("val.changes.jsonl")));
    QFile f(json);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), original);

    DatasetBrowser again;
    again.resize(1200, 800);
    again.show();
    QSignalSpy loaded2(&again, &DatasetBrowser::datasetLoaded);
    QSignalSpy shown2(&again, &DatasetBrowser::imageShown);
    again.openDataset(json, valImages());
    QVERIFY(loaded2.wait(20000));
    QVERIFY(again.edits());
    again.grid()->setCurrentIndex(again.model()->index(0));
    QVERIFY(shown2.wait(20000));
    QCOMPARE(again.imageView()->instances().size(), before - 1);
    QString error;
    QVERIFY2(!again.saveReviewed(&error).isEmpty(), qPrintable(error));
    QVERIFY(QFile::exists(dir.filePath("val.reviewed.json")));
  }

  // The Statistics tab: the dataset check of the file as charts (its bars add up to the file's
  // non-crowd instances and images) and its problems (COCO's id gaps, unused categories).
  void statisticsTabShowsTheDatasetCheck() {
    const QJsonObject json = readJson(valJson());
    int instances = 0;
    for (const QJsonValue& a : json["annotations"].toArray())
      instances += a.toObject()["iscrowd"].toInt() == 0;
    DatasetBrowser browser;
    browser.resize(1200, 800);
    browser.show();
    QSignalSpy loaded(&browser, &DatasetBrowser::datasetLoaded);
    browser.openDataset(valJson(), valImages());
    QVERIFY(loaded.wait(20000));
    browser.showStatistics();
    QVERIFY(browser.statsView()->isVisible());
    const auto sum = [](const QVector<double>& v) {
      return std::accumulate(v.begin(), v.end(), 0.0);
    };
    DatasetStatsView* stats = browser.statsView();
    QCOMPARE(sum(stats->bars(0)), static_cast<double>(instances));  // fewer than 30 classes used
    QCOMPARE(sum(stats->bars(1)), static_cast<double>(instances));
    QCOMPARE(sum(stats->bars(3)), static_cast<double>(json["images"].toArray().size()));
    const QVector<double> classes = stats->bars(0);
    QVERIFY(std::is_sorted(classes.rbegin(), classes.rend()));  // most first
    QStringList problems;
    for (int i = 0; i < stats->problems()->count(); ++i)
      problems << stats->problems()->item(i)->text();
    QVERIFY2(problems.filter("[id_gaps]").size() == 1 &&
                 problems.filter("[unused_categories]").size() == 1,
             qPrintable(problems.join('\n')));
    QVERIFY(stats->coverageText().contains("% of the boxes have an anchor at IoU"));
    QVERIFY2(stats->coverageText().startsWith("Anchor coverage with the default anchors"),
             qPrintable(stats->coverageText()));
  }

  // The views' image reader treats every bad file the same: no picture, a problem naming
  // the file (the engine's rules: dataset/image/decode_image.h); a good file in the stored
  // pixel grid.
  void badImagesGiveAProblemNamingTheFile() {
    QTemporaryDir dir;
    const QString good_path = QDir(valImages()).entryList({"*.jpg"}, QDir::Files).front();
    QFile good_file(valImages() + "/" + good_path);
    QVERIFY(good_file.open(QIODevice::ReadOnly));
    const QByteArray good = good_file.readAll();
    QByteArray bomb("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\xea\x60\0\0\xea\x60\x08\x02\0\0\0", 29);
    bomb += QByteArray(4, '\0') + QByteArray("\0\0\0\0IEND", 8) + QByteArray(4, '\0');
    const std::map<QString, QByteArray> files = {
        {"empty.jpg", {}},
        {"truncated.jpg", good.left(good.size() / 2)},
        {"text.jpg", "not an image\n"},
        {"bomb.png", bomb},
    };
    const std::map<QString, QString> expected = {
        {"empty.jpg", "empty file"},
        {"truncated.jpg", "truncated JPEG"},
        {"text.jpg", "cannot be decoded"},
        {"bomb.png", "claims 60000x60000 pixels"},
    };
    for (const auto& [name, bytes] : files) {
      QFile f(dir.filePath(name));
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(bytes);
      f.close();
      const ImageFile read = readImageFile(dir.filePath(name));
      QVERIFY2(read.image.isNull(), qPrintable(name));
      QVERIFY2(read.problem.startsWith(name + ": ") && read.problem.contains(expected.at(name)),
               qPrintable(read.problem));
    }
    const ImageFile ok = readImageFile(valImages() + "/" + good_path);
    QVERIFY2(ok.problem.isEmpty() && !ok.image.isNull(), qPrintable(ok.problem));
    const ImageFile thumb = readImageFile(valImages() + "/" + good_path, QSize(80, 60));
    QVERIFY(thumb.image.width() <= 80 && thumb.image.height() <= 60);
  }

  void filtersNarrowTheGrid() {
    const QJsonObject json = readJson(valJson());
    std::map<int64_t, std::set<int64_t>> images_of_category;
    for (const QJsonValue& v : json["annotations"].toArray())
      images_of_category[v["category_id"].toInteger()].insert(v["image_id"].toInteger());
    DatasetBrowser browser;
    QSignalSpy loaded(&browser, &DatasetBrowser::datasetLoaded);
    browser.openDataset(valJson(), valImages());
    QVERIFY(loaded.wait(20000));
    const int all = browser.model()->rowCount();
    int narrowed = 0;
    for (const auto& [category, ids] : images_of_category) {
      browser.setCategoryFilter(category);
      std::set<int64_t> shown;
      for (int row = 0; row < browser.model()->rowCount(); ++row)
        shown.insert(browser.model()->index(row).data(ImageListModel::ImageIdRole).toLongLong());
      QCOMPARE(shown, ids);
      narrowed += static_cast<int>(ids.size()) < all;
    }
    QVERIFY(narrowed > 0);
    browser.setCategoryFilter(-1);
    QCOMPARE(browser.model()->rowCount(), all);
    // By id (exactly) and by a part of the file name.
    browser.setTextFilter("565004");
    QCOMPARE(browser.model()->rowCount(), 1);
    QCOMPARE(browser.model()->index(0).data(ImageListModel::ImageIdRole).toLongLong(), 565004);
    browser.setTextFilter("00000047");
    int expected = 0;
    for (const QJsonValue& v : json["images"].toArray())
      expected += v["file_name"].toString().contains("00000047");
    QCOMPARE(browser.model()->rowCount(), expected);
    browser.setTextFilter("no such file");
    QCOMPARE(browser.model()->rowCount(), 0);
    // Both at once: a category and a text that its images do not match.
    browser.setTextFilter("");
    browser.setCategoryFilter(images_of_category.begin()->first);
    QCOMPARE(browser.model()->rowCount(),
             static_cast<int>(images_of_category.begin()->second.size()));
  }

  // The selected image's masks are painted where the json's polygons are: a pixel covered by
  // exactly one annotation is the blend of the photo and that category's colour; with the
  // masks layer off, it is the photo.
  void selectingAnImagePaintsItsMasks() {
    const QJsonObject json = readJson(valJson());
    const int64_t image_id = 565004;
    int h = 0, w = 0;
    QString file;
    for (const QJsonValue& v : json["images"].toArray())
      if (v["id"].toInteger() == image_id) {
        h = v["height"].toInt();
        w = v["width"].toInt();
        file = v["file_name"].toString();
      }
    std::vector<std::pair<QJsonObject, cv::Mat>> masks;
    cv::Mat coverage(h, w, CV_8UC1, cv::Scalar(0));
    for (const QJsonValue& v : json["annotations"].toArray()) {
      if (v["image_id"].toInteger() != image_id) continue;
      masks.emplace_back(v.toObject(), maskOf(v.toObject(), h, w));
      coverage += masks.back().second;
    }
    QVERIFY(!masks.empty());

    DatasetBrowser browser;
    browser.resize(1200, 800);
    browser.show();
    QSignalSpy loaded(&browser, &DatasetBrowser::datasetLoaded);
    browser.openDataset(valJson(), valImages());
    QVERIFY(loaded.wait(20000));
    QSignalSpy shown(&browser, &DatasetBrowser::imageShown);
    QVERIFY(browser.selectImage(image_id));
    QVERIFY(waitFor([&] {
      return browser.currentImageId() == image_id && !shown.isEmpty() &&
             shown.last().at(0).toLongLong() == image_id;
    }));
    ImageView* view = browser.imageView();
    QCOMPARE(view->image().size(), QSize(w, h));
    QCOMPARE(view->instances().size(), masks.size());
    const QImage photo = QImage(valImages() + "/" + file).convertToFormat(QImage::Format_RGB32);

    OverlayLayers layers = browser.layerControls()->layers();
    layers.labels = false;
    layers.boxes = false;
    layers.mask_opacity = 0.6;
    browser.layerControls()->setLayers(layers);
    QCOMPARE(view->layers().mask_opacity, 0.6);
    const QImage painted = renderOverlay(view->image(), view->instances(), view->layers());
    if (qEnvironmentVariableIsSet("MRCNN_TEST_DUMP"))
      painted.save(qEnvironmentVariable("MRCNN_TEST_DUMP"));
    // The scene as the view holds it, rendered: the same pixels.
    const QImage scene = view->renderScene();
    int checked = 0;
    for (const auto& [annotation, mask] : masks) {
      if (annotation["iscrowd"].toInt()) continue;
      // A pixel of this mask alone, 2 pixels inside it (away from the drawn outline).
      cv::Mat inner;
      cv::erode(mask, inner, cv::Mat::ones(5, 5, CV_8UC1), cv::Point(-1, -1), 1,
                cv::BORDER_CONSTANT, cv::Scalar(0));
      const QRgb colour = categoryColour(annotation["category_id"].toInteger()).rgb();
      for (int y = 0; y < h && checked < 1000; y += 3) {
        for (int x = 0; x < w; x += 3) {
          if (!inner.at<uint8_t>(y, x) || coverage.at<uint8_t>(y, x) != 1) continue;
          const QRgb p = photo.pixel(x, y);
          const QRgb want = qRgb(qRound(qRed(p) * 0.4 + qRed(colour) * 0.6),
                                 qRound(qGreen(p) * 0.4 + qGreen(colour) * 0.6),
                                 qRound(qBlue(p) * 0.4 + qBlue(colour) * 0.6));
          QVERIFY2(channelDistance(painted.pixel(x, y), want) <= 3,
                   qPrintable(QString("annotation %1 at (%2, %3): painted %4, want %5, photo %6")
                                  .arg(annotation["id"].toInteger())
                                  .arg(x)
                                  .arg(y)
                                  .arg(painted.pixel(x, y), 0, 16)
                                  .arg(want, 0, 16)
                                  .arg(p, 0, 16)));
          if (scene.size() == photo.size()) QVERIFY(channelDistance(scene.pixel(x, y), want) <= 3);
          ++checked;
          break;
        }
      }
    }
    QVERIFY2(checked > 20, qPrintable(QString("only %1 pixels checked").arg(checked)));
    // Nothing painted where no mask is (boxes and labels off).
    for (int y = 0; y < h; y += 17)
      for (int x = 0; x < w; x += 17)
        if (!coverage.at<uint8_t>(y, x)) QCOMPARE(painted.pixel(x, y), photo.pixel(x, y));
    layers.masks = false;
    browser.layerControls()->setLayers(layers);
    const QImage bare = renderOverlay(view->image(), view->instances(), view->layers());
    QCOMPARE(bare, photo.convertToFormat(bare.format()));
  }

  // A spec's splits (paths relative to the spec's folder); a spec with errors is refused
  // with its first error.
  void opensASpecsDataset() {
    QTemporaryDir dir;
    QFile spec(dir.filePath("tiny.txt"));
    QVERIFY(spec.open(QIODevice::WriteOnly));
    const QString rel = QDir(dir.path()).relativeFilePath(tinycoco());
    spec.write(QString("total_steps: 10\ndata_config {\n"
                       "  train_json_file: \"%1/annotations/instances_train2017.json\"\n"
                       "  train_image_dir: \"%1/images/train2017\"\n"
                       "  val_json_file: \"%1/annotations/instances_val2017.json\"\n"
                       "  val_image_dir: \"%1/images/val2017\"\n  num_classes: 91\n}\n"
                       "maskrcnn_config {\n  rpn_positive_overlap: 0.4\n}\n")
                   .arg(rel)
                   .toUtf8());
    spec.close();
    DatasetBrowser browser;
    QSignalSpy loaded(&browser, &DatasetBrowser::datasetLoaded);
    QVERIFY2(browser.openSpecDataset(spec.fileName(), "val"), qPrintable(browser.statusText()));
    QVERIFY(loaded.wait(20000));
    QVERIFY2(loaded.last().at(0).toBool(), qPrintable(loaded.last().at(1).toString()));
    QCOMPARE(browser.model()->rowCount(), 6);
    // The Statistics tab checks the spec's own anchors (its positive IoU 0.4).
    QVERIFY2(browser.statsView()->coverageText().contains(
                 "Anchor coverage with the anchors and resize of tiny.txt: "),
             qPrintable(browser.statsView()->coverageText()));
    QVERIFY(browser.statsView()->coverageText().contains("IoU ≥ 0.40"));
    QVERIFY(browser.openSpecDataset(spec.fileName(), "train"));
    QVERIFY(loaded.wait(20000));
    QCOMPARE(browser.model()->rowCount(), 32);
    QFile bad(dir.filePath("bad.txt"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("data_config {\n  num_clases: 3\n}\n");
    bad.close();
    QVERIFY(!browser.openSpecDataset(bad.fileName(), "val"));
    QVERIFY2(loaded.last().at(1).toString().contains("bad.txt:") &&
                 loaded.last().at(1).toString().contains("error:"),
             qPrintable(loaded.last().at(1).toString()));
    QCOMPARE(browser.model()->rowCount(), 32);  // the dataset shown stays
  }

  // A 5,000-image dataset (tinycoco's images and annotations repeated, 113,000 annotations)
  // opens while a 10 ms timer keeps firing: the json is read, indexed and the grid filled
  // without the UI thread stalling for 100 ms.
  void largeDatasetOpensWithoutFreezing() {
    const QJsonObject json = readJson(valJson());
    const QJsonArray images = json["images"].toArray();
    std::map<int64_t, QJsonArray> annotations_of;
    for (const QJsonValue& v : json["annotations"].toArray())
      annotations_of[v["image_id"].toInteger()].append(v);
    QTemporaryDir dir;
    QByteArray out = "{\"images\": [";
    QByteArray anns = "], \"annotations\": [";
    int64_t next_id = 1;
    const int n = 5000;
    for (int i = 0; i < n; ++i) {
      QJsonObject im = images[i % images.size()].toObject();
      const int64_t source = im["id"].toInteger();
      im["id"] = i + 1;
      out += (i ? "," : "") + QJsonDocument(im).toJson(QJsonDocument::Compact);
      for (const QJsonValue& v : annotations_of[source]) {
        QJsonObject a = v.toObject();
        a["id"] = static_cast<qint64>(next_id);
        a["image_id"] = i + 1;
        anns += (next_id > 1 ? "," : "") + QJsonDocument(a).toJson(QJsonDocument::Compact);
        ++next_id;
      }
    }
    out += anns + "], \"categories\": " +
           QJsonDocument(json["categories"].toArray()).toJson(QJsonDocument::Compact) + "}";
    const QString path = dir.filePath("big.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(out);
    f.close();

    DatasetBrowser browser;
    browser.resize(1200, 800);
    browser.show();
    QVERIFY(QTest::qWaitForWindowExposed(&browser));
    QElapsedTimer clock;
    qint64 last = 0, max_gap = 0;
    int ticks = 0;
    QTimer timer;
    timer.setInterval(10);
    connect(&timer, &QTimer::timeout, [&] {
      const qint64 now = clock.elapsed();
      max_gap = std::max(max_gap, now - last);
      last = now;
      ++ticks;
    });
    QSignalSpy loaded(&browser, &DatasetBrowser::datasetLoaded);
    QSignalSpy shown(&browser, &DatasetBrowser::imageShown);
    clock.start();
    timer.start();
    browser.openDataset(path, valImages());
    QVERIFY(loaded.wait(60000));
    QVERIFY(loaded.first().at(0).toBool());
    const qint64 loaded_at = clock.elapsed();
    // Then the first image with its overlays and the visible thumbnails.
    QVERIFY(waitFor([&] { return !shown.isEmpty(); }, 30000));
    QVERIFY(waitFor([&] {
      return !browser.model()
                  ->index(0)
                  .data(ImageListModel::ThumbnailRole)
                  .value<QImage>()
                  .isNull();
    }));
    // Scroll to the end: rows there get their thumbnails too.
    browser.grid()->scrollToBottom();
    QVERIFY(waitFor([&] {
      return !browser.model()
                  ->index(n - 1)
                  .data(ImageListModel::ThumbnailRole)
                  .value<QImage>()
                  .isNull();
    }));
    timer.stop();
    QCOMPARE(browser.model()->rowCount(), n);
    qInfo(
        "5,000 images, %lld annotations (%lld MB): loaded after %lld ms, thumbnails at both "
        "ends after %lld ms, %d timer ticks, longest gap %lld ms",
        static_cast<long long>(next_id - 1), static_cast<long long>(out.size() >> 20),
        static_cast<long long>(loaded_at), static_cast<long long>(clock.elapsed()), ticks,
        static_cast<long long>(max_gap));
    QVERIFY2(max_gap < 100, qPrintable(QString("the event loop stalled %1 ms").arg(max_gap)));
  }

  // docs/screenshots/dataset_browser.png when MRCNN_SCREENSHOTS names a folder: tinycoco's
  // train split with a crowd region on screen.
  void screenshot() {
    const QString out = qEnvironmentVariable("MRCNN_SCREENSHOTS");
    if (out.isEmpty()) QSKIP("set MRCNN_SCREENSHOTS to a folder to write the screenshot");
    const QString json = tinycoco() + "/annotations/instances_train2017.json";
    int64_t crowd_image = -1;
    for (const QJsonValue& a : readJson(json)["annotations"].toArray())
      if (a["iscrowd"].toInt() && crowd_image < 0) crowd_image = a["image_id"].toInteger();
    DatasetBrowser browser;
    browser.resize(1400, 860);
    browser.show();
    QSignalSpy loaded(&browser, &DatasetBrowser::datasetLoaded);
    browser.openDataset(json, tinycoco() + "/images/train2017");
    QVERIFY(loaded.wait(20000));
    QSignalSpy shown(&browser, &DatasetBrowser::imageShown);
    QVERIFY(browser.selectImage(crowd_image));
    QVERIFY(waitFor(
        [&] { return !shown.isEmpty() && shown.last().at(0).toLongLong() == crowd_image; }));
    QVERIFY(waitFor([&] {
      for (int row = 0; row < std::min(12, browser.model()->rowCount()); ++row)
        if (browser.model()
                ->index(row)
                .data(ImageListModel::ThumbnailRole)
                .value<QImage>()
                .isNull())
          return false;
      return true;
    }));
    QTest::qWait(200);
    QVERIFY(browser.grab().save(out + "/dataset_browser.png"));
    // The same under a dark palette (MRCNN_SCREENSHOTS_DARK): colours follow the palette.
    if (qEnvironmentVariableIsSet("MRCNN_SCREENSHOTS_DARK")) {
      QPalette dark;
      dark.setColor(QPalette::Window, QColor(45, 45, 48));
      dark.setColor(QPalette::WindowText, QColor(220, 220, 220));
      dark.setColor(QPalette::Base, QColor(30, 30, 32));
      dark.setColor(QPalette::Text, QColor(220, 220, 220));
      dark.setColor(QPalette::Button, QColor(55, 55, 58));
      dark.setColor(QPalette::ButtonText, QColor(220, 220, 220));
      dark.setColor(QPalette::Highlight, QColor(42, 130, 218));
      QApplication::setStyle("Fusion");
      QApplication::setPalette(dark);
      QTest::qWait(200);
      QVERIFY(browser.grab().save(out + "/dataset_browser_dark.png"));
    }
  }
};

QTEST_MAIN(DatasetBrowserTest)
#include "test_dataset_browser.moc"

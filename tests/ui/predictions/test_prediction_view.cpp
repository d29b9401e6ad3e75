// The prediction view on tinycoco: a results.json in the engine's format (its ground truth
// turned into detections with scores, masks as compressed RLE) is read back exactly; the
// overlays follow the score threshold (low scores hidden, their pixels back to the photo);
// ground truth is shown beside; and inference runs through an engine process: the arguments
// of the contract, results shown when it succeeds, its error when it fails.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QSlider>
#include <QTemporaryDir>
#include <QtTest>
#include <map>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "dataset/mask/rle.h"
#include "ui/common/image_view.h"
#include "ui/common/overlay.h"
#include "ui/predictions/inference_runner.h"
#include "ui/predictions/prediction_results.h"
#include "ui/predictions/prediction_view.h"

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

int channelDistance(QRgb a, QRgb b) {
  return std::max({std::abs(qRed(a) - qRed(b)), std::abs(qGreen(a) - qGreen(b)),
                   std::abs(qBlue(a) - qBlue(b))});
}

struct Made {
  QString results;
  std::map<QString, std::vector<QJsonObject>> by_file;  // detections per file
  std::map<QString, cv::Mat> coverage;                  // detections covering each pixel
};

// The ground truth's non-crowd annotations as detections: score 0.05, 0.15, ... cycling, the
// mask the polygons rasterise to, written as the engine writes OUT/results.json and
// OUT/categories.json.
Made makeResults(const QString& out_dir) {
  Made made;
  const QJsonObject gt = readJson(valJson());
  std::map<int64_t, QJsonObject> images;
  for (const QJsonValue& v : gt["images"].toArray())
    images[v["id"].toInteger()] = v.toObject();
  QJsonArray results;
  int n = 0;
  for (const QJsonValue& v : gt["annotations"].toArray()) {
    const QJsonObject a = v.toObject();
    if (a["iscrowd"].toInt()) continue;
    const QJsonObject& image = images[a["image_id"].toInteger()];
    const int h = image["height"].toInt(), w = image["width"].toInt();
    std::vector<ds::Polygon> polygons;
    for (const QJsonValue& p : a["segmentation"].toArray()) {
      ds::Polygon poly;
      for (const QJsonValue& c : p.toArray())
        poly.push_back(c.toDouble());
      polygons.push_back(poly);
    }
    const ds::Rle rle =
        ds::rleFromPolygons(polygons, static_cast<uint32_t>(h), static_cast<uint32_t>(w));
    QJsonObject d{{"image_id", a["image_id"]},
                  {"file_name", image["file_name"]},
                  {"category_id", a["category_id"]},
                  {"bbox", a["bbox"]},
                  {"score", 0.05 + 0.1 * (n++ % 10)},
                  {"segmentation",
                   QJsonObject{{"size", QJsonArray{h, w}},
                               {"counts", QString::fromStdString(ds::toCompressedString(rle))}}}};
    results.append(d);
    const QString file = image["file_name"].toString();
    made.by_file[file].push_back(d);
    cv::Mat& cov = made.coverage[file];
    if (cov.empty()) cov = cv::Mat(h, w, CV_8UC1, cv::Scalar(0));
    cov += ds::decodeMask(rle);
  }
  QDir().mkpath(out_dir);
  made.results = out_dir + "/results.json";
  QFile f(made.results);
  f.open(QIODevice::WriteOnly);
  f.write(QJsonDocument(results).toJson());
  f.close();
  QJsonArray cats;
  for (const QJsonValue& c : gt["categories"].toArray())
    cats.append(QJsonObject{{"id", c["id"]}, {"name", c["name"]}});
  QFile cf(out_dir + "/categories.json");
  cf.open(QIODevice::WriteOnly);
  cf.write(QJsonDocument(cats).toJson());
  return made;
}

}  // namespace

class PredictionViewTest : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void initTestCase() {
    if (!QFile::exists(valJson())) QSKIP("tinycoco is not there (MRCNN_SHARED_DIR)");
  }

  void resultsReadBackExactly() {
    const Made made = makeResults(dir_.filePath("read"));
    const PredictionSet set = readPredictions(made.results);
    QCOMPARE(set.images.size(), made.by_file.size());
    size_t total = 0;
    for (const PredictedImage& image : set.images) {
      const auto& want = made.by_file.at(image.file_name);
      QCOMPARE(image.predictions.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        const Prediction& p = image.predictions[i];
        QCOMPARE(p.score, want[i]["score"].toDouble());
        QCOMPARE(p.category_id, want[i]["category_id"].toInteger());
        QCOMPARE(p.box.width(), want[i]["bbox"][2].toDouble());
        QVERIFY(p.mask.has_value());
        QCOMPARE(QString::fromStdString(ds::toCompressedString(*p.mask)),
                 want[i]["segmentation"]["counts"].toString());
      }
      total += image.predictions.size();
    }
    QCOMPARE(set.count, total);
    QCOMPARE(set.category_names.value(1), QString("person"));
    // A bad file names the place.
    QFile bad(dir_.filePath("bad.json"));
    bad.open(QIODevice::WriteOnly);
    bad.write(R"([{"image_id": 1, "category_id": 1, "bbox": [1, 2, 3], "score": 0.5}])");
    bad.close();
    try {
      readPredictions(bad.fileName());
      QFAIL("no error");
    } catch (const PredictionError& e) {
      QVERIFY2(QString(e.what()).contains("bad.json: [0].bbox: expected 4 numbers"), e.what());
    }
  }

  // The threshold slider hides detections below it: the view holds exactly those at or above,
  // and a pixel covered only by a low-scoring mask is tinted at 0 and the photo's at 0.5.
  void thresholdSliderHidesLowScores() {
    const Made made = makeResults(dir_.filePath("view"));
    PredictionView view;
    view.resize(1300, 800);
    view.show();
    QSignalSpy loaded(&view, &PredictionView::resultsLoaded);
    QSignalSpy shown(&view, &PredictionView::imageShown);
    view.showResults(made.results, valImages(), valJson());
    QVERIFY(loaded.wait(20000));
    QVERIFY(loaded.first().at(0).toBool());
    QVERIFY(shown.wait(20000));
    const PredictedImage& image = view.predictions()->images[0];
    const auto& want = made.by_file.at(image.file_name);
    ImageView* iv = view.predictionImageView();
    for (double t : {0.0, 0.3, 0.5, 0.95, 1.0}) {
      view.thresholdSlider()->setValue(static_cast<int>(t * 100));
      size_t expected = 0;
      for (const QJsonObject& d : want)
        expected += d["score"].toDouble() >= t;
      QCOMPARE(iv->instances().size(), expected);
      for (const OverlayInstance& i : iv->instances())
        QVERIFY(i.score >= t);
    }
    // A pixel of a 0.05 detection alone.
    const cv::Mat& coverage = made.coverage.at(image.file_name);
    const QImage photo =
        QImage(valImages() + "/" + image.file_name).convertToFormat(QImage::Format_RGB32);
    QPoint pixel(-1, -1);
    QRgb colour = 0;
    for (const QJsonObject& d : want) {
      if (d["score"].toDouble() > 0.1) continue;
      const QJsonObject seg = d["segmentation"].toObject();
      cv::Mat m = ds::decodeMask(ds::fromCompressedString(
          seg["counts"].toString().toStdString(), static_cast<uint32_t>(seg["size"][0].toInt()),
          static_cast<uint32_t>(seg["size"][1].toInt())));
      cv::erode(m, m, cv::Mat::ones(5, 5, CV_8UC1), cv::Point(-1, -1), 1, cv::BORDER_CONSTANT,
                cv::Scalar(0));
      for (int y = 0; y < m.rows && pixel.x() < 0; y += 2)
        for (int x = 0; x < m.cols; x += 2)
          if (m.at<uint8_t>(y, x) && coverage.at<uint8_t>(y, x) == 1) {
            pixel = QPoint(x, y);
            colour = categoryColour(d["category_id"].toInteger()).rgb();
            break;
          }
      if (pixel.x() >= 0) break;
    }
    QVERIFY2(pixel.x() >= 0, "no pixel covered by a low-scoring detection alone");
    OverlayLayers layers = iv->layers();
    layers.boxes = false;
    layers.labels = false;
    layers.mask_opacity = 0.5;
    iv->setLayers(layers);
    view.setScoreThreshold(0.0);
    QImage painted = renderOverlay(iv->image(), iv->instances(), iv->layers());
    const QRgb p = photo.pixel(pixel);
    const QRgb blend = qRgb((qRed(p) + qRed(colour) + 1) / 2, (qGreen(p) + qGreen(colour) + 1) / 2,
                            (qBlue(p) + qBlue(colour) + 1) / 2);
    QVERIFY(channelDistance(painted.pixel(pixel), blend) <= 3);
    view.setScoreThreshold(0.5);
    painted = renderOverlay(iv->image(), iv->instances(), iv->layers());
    QCOMPARE(painted.pixel(pixel), photo.pixel(pixel));
    // Labels carry the score.
    for (const OverlayInstance& i : iv->instances())
      QVERIFY(i.label.endsWith(QString::number(i.score, 'f', 2)));
  }

  void groundTruthToggledAndSideBySide() {
    const Made made = makeResults(dir_.filePath("gt"));
    const QJsonObject gt = readJson(valJson());
    PredictionView view;
    view.resize(1300, 800);
    view.show();
    QSignalSpy shown(&view, &PredictionView::imageShown);
    view.showResults(made.results, valImages(), valJson());
    QVERIFY(shown.wait(20000));
    const PredictedImage& image = view.predictions()->images[0];
    size_t truth = 0;
    for (const QJsonValue& a : gt["annotations"].toArray())
      truth += a["image_id"].toInteger() == image.image_id;
    view.setMode(PredictionView::Mode::GroundTruth);
    QCOMPARE(view.predictionImageView()->instances().size(), truth);
    for (const OverlayInstance& i : view.predictionImageView()->instances())
      QCOMPARE(i.score, -1.0);
    view.setMode(PredictionView::Mode::SideBySide);
    QVERIFY(view.groundTruthImageView()->isVisible());
    QCOMPARE(view.groundTruthImageView()->instances().size(), truth);
    view.setScoreThreshold(0);
    QCOMPARE(view.predictionImageView()->instances().size(), image.predictions.size());
    view.setMode(PredictionView::Mode::Predictions);
    QVERIFY(!view.groundTruthImageView()->isVisible());
  }

  void inferenceRunsThroughTheEngineProcess() {
    const Made made = makeResults(dir_.filePath("engine_src"));
    InferenceRequest r;
    r.spec = "spec.txt";
    r.checkpoint = "ck.pt";
    r.images = "/imgs";
    r.out = "/out";
    QCOMPARE(InferenceRunner::arguments(r),
             QStringList({"--spec", "spec.txt", "--task", "inference", "--images", "/imgs", "--out",
                          "/out", "--checkpoint", "ck.pt"}));
    // OpenVINO as the backend: the engine is asked for it.
    r.backend = "openvino";
    QCOMPARE(InferenceRunner::arguments(r),
             QStringList({"--spec", "spec.txt", "--task", "inference", "--images", "/imgs", "--out",
                          "/out", "--checkpoint", "ck.pt", "--backend", "openvino"}));
    // Tiles: their side and overlap.
    r.tile = 640;
    r.tile_overlap = 0.25;
    QCOMPARE(InferenceRunner::arguments(r).mid(10),
             QStringList({"--backend", "openvino", "--tile", "640", "--tile-overlap", "0.25"}));
    r.tile = 0;
    // An exported model for OpenVINO (an export's model.int8.onnx): named; not with LibTorch.
    r.onnx = "/exp/model.int8.onnx";
    QCOMPARE(InferenceRunner::arguments(r).mid(10),
             QStringList({"--backend", "openvino", "--onnx", "/exp/model.int8.onnx"}));
    r.backend = "libtorch";
    QVERIFY(!InferenceRunner::arguments(r).contains("--onnx"));
    r.backend = "openvino";
    r.onnx.clear();
    // A stand-in engine keeping the contract: it checks its arguments and writes the results.
    const QString engine = dir_.filePath("fake-engine.sh");
    QFile script(engine);
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write(QString("#!/bin/sh\n"
                         "[ \"$1 $3 $4\" = \"--spec --task inference\" ] || { echo 'error: bad "
                         "args' >&2; exit 2; }\n"
                         "[ \"$5\" = --images ] && [ \"$7\" = --out ] || exit 2\n"
                         "[ \"$9\" = --checkpoint ] && [ \"${10}\" = ck.pt ] || exit 2\n"
                         "[ \"${11} ${12}\" = \"--backend openvino\" ] || exit 2\n"
                         "if [ \"${13}\" = --onnx ]; then [ -f \"${14}\" ] || "
                         "{ echo \"error: ${14}: no model\" >&2; exit 4; }; fi\n"
                         "[ -e \"$2\" ] || { echo \"error: $2: no such spec\" >&2; exit 4; }\n"
                         "mkdir -p \"$8\" && cp '%1' '%2' \"$8\"/ && echo done\n")
                     .arg(made.results, dir_.filePath("engine_src/categories.json"))
                     .toUtf8());
    script.close();
    script.setPermissions(script.permissions() | QFileDevice::ExeOwner);
    qputenv("MRCNN_ENGINE", engine.toUtf8());
    PredictionView view;
    view.setOutputRoot(dir_.filePath("inference"));  // not the user's data folder
    view.setCheckpoint("ck.pt");
    QCOMPARE(view.backend(), QString("libtorch"));
    view.setBackend("openvino");
    QSignalSpy finished(&view, &PredictionView::inferenceFinished);
    QSignalSpy loaded(&view, &PredictionView::resultsLoaded);
    // A spec the engine cannot find: its error and exit code are shown.
    view.setSpec(dir_.filePath("missing.txt"));
    view.runOnFolder(valImages());
    QVERIFY(finished.wait(20000));
    QCOMPARE(finished.last().at(0).toBool(), false);
    QVERIFY2(finished.last().at(1).toString().contains("code 4") &&
                 finished.last().at(1).toString().contains("no such spec"),
             qPrintable(finished.last().at(1).toString()));
    QVERIFY(view.statusText().contains("no such spec"));
    // A spec it takes: the results are loaded from OUT.
    QFile spec(dir_.filePath("spec.txt"));
    spec.open(QIODevice::WriteOnly);
    spec.close();
    view.setSpec(spec.fileName());
    view.runOnFolder(valImages());
    QVERIFY(finished.wait(20000));
    QVERIFY2(finished.last().at(0).toBool(), qPrintable(finished.last().at(1).toString()));
    QVERIFY(loaded.wait(20000));
    QVERIFY(loaded.last().at(0).toBool());
    QCOMPARE(view.predictions()->images.size(), made.by_file.size());
    QVERIFY(view.predictions()->path.endsWith("/results.json"));
    // An exported model: the OpenVINO run names it; one that is not there is refused before
    // the engine starts, by name; the row follows the backend.
    const QString model = dir_.filePath("model.int8.onnx");
    QFile(model).open(QIODevice::WriteOnly);
    view.setExportedModel(model);
    view.runOnFolder(valImages());
    QVERIFY(finished.wait(20000));
    QVERIFY2(finished.last().at(0).toBool(), qPrintable(finished.last().at(1).toString()));
    view.setExportedModel(dir_.filePath("gone.onnx"));
    view.runOnFolder(valImages());
    QCOMPARE(finished.last().at(0).toBool(), false);
    QVERIFY2(finished.last().at(1).toString().contains("no such exported model: " +
                                                       dir_.filePath("gone.onnx")),
             qPrintable(finished.last().at(1).toString()));
    view.setExportedModel({});
    // No engine at all: said so, nothing started.
    qputenv("MRCNN_ENGINE", dir_.filePath("no-engine").toUtf8());
    view.runOnFolder(valImages());
    QCOMPARE(finished.last().at(0).toBool(), false);
    QVERIFY(finished.last().at(1).toString().contains("MRCNN_ENGINE"));
    qunsetenv("MRCNN_ENGINE");
  }

  // The engine's stdout as JSON-lines events: shown as text (not raw JSON), its progress
  // counted, and an error event is the message a failure shows (over a stderr line).
  void engineEventsAreReadAsEvents() {
    const QString engine = dir_.filePath("event-engine.sh");
    QFile script(engine);
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write(
        "#!/bin/sh\n"
        "echo '{\"v\":1,\"type\":\"start\",\"time\":1,\"task\":\"inference\",\"device\":\"cpu\","
        "\"totalSteps\":\"3\"}'\n"
        "echo '{\"v\":1,\"type\":\"progress\",\"time\":2,\"step\":\"1\"}'\n"
        "echo '{\"v\":1,\"type\":\"warning\",\"time\":2,\"code\":\"corrupt_image\","
        "\"message\":\"b.jpg: truncated JPEG; skipped\"}'\n"
        "echo 'error: something on stderr' >&2\n"
        "echo '{\"v\":1,\"type\":\"error\",\"time\":3,\"code\":\"bad_checkpoint\","
        "\"message\":\"ck.pt: not a checkpoint\",\"exitCode\":4}'\n"
        "echo '{\"v\":1,\"type\":\"done\",\"time\":3,\"status\":\"failed\"}'\n"
        "exit 4\n");
    script.close();
    script.setPermissions(script.permissions() | QFileDevice::ExeOwner);
    qputenv("MRCNN_ENGINE", engine.toUtf8());
    InferenceRunner runner;
    QStringList lines;
    QList<QPair<qint64, qint64>> progress;
    connect(&runner, &InferenceRunner::output, this, [&lines](const QString& l) { lines << l; });
    connect(&runner, &InferenceRunner::progress, this, [&progress](qint64 done, qint64 total) {
      progress.append({done, total});
    });
    QSignalSpy finished(&runner, &InferenceRunner::finished);
    QString error;
    InferenceRequest request;
    request.spec = engine;
    request.checkpoint = "ck.pt";
    request.images = valImages();
    request.out = dir_.filePath("ev_out");
    QVERIFY2(runner.start(request, &error), qPrintable(error));
    QVERIFY(finished.wait(20000));
    QCOMPARE(finished[0][0].toBool(), false);
    const QString message = finished[0][1].toString();
    QVERIFY2(
        message.contains("code 4") && message.contains("[bad_checkpoint] ck.pt: not a checkpoint"),
        qPrintable(message));
    for (const QString& l : lines)
      QVERIFY2(!l.startsWith('{'), qPrintable(l));
    QVERIFY(lines.contains("start: inference on cpu"));
    QVERIFY(lines.contains("warning [corrupt_image]: b.jpg: truncated JPEG; skipped"));
    QCOMPARE(progress, (QList<QPair<qint64, qint64>>{{1, 3}}));
    qunsetenv("MRCNN_ENGINE");
  }

  // docs/screenshots/predictions.png when MRCNN_SCREENSHOTS names a folder: tinycoco's ground
  // truth as detections, side by side with the ground truth, threshold 0.3.
  void screenshot() {
    const QString out = qEnvironmentVariable("MRCNN_SCREENSHOTS");
    if (out.isEmpty()) QSKIP("set MRCNN_SCREENSHOTS to a folder to write the screenshot");
    const Made made = makeResults(dir_.filePath("shot"));
    PredictionView view;
    view.resize(1400, 860);
    view.show();
    view.setSpec(qEnvironmentVariable("MRCNN_SOURCE_DIR") + "/specs/coco_resnet50.txt");
    view.setCheckpoint("runs/coco_resnet50/checkpoints/model.step-90000.pt");
    QSignalSpy shown(&view, &PredictionView::imageShown);
    view.showResults(made.results, valImages(), valJson());
    QVERIFY(shown.wait(20000));
    view.selectImage(1);
    QVERIFY(shown.wait(20000));
    view.setMode(PredictionView::Mode::SideBySide);
    view.setScoreThreshold(0.3);
    QTest::qWait(200);
    QVERIFY(view.grab().save(out + "/predictions.png"));
  }
};

QTEST_MAIN(PredictionViewTest)
#include "test_prediction_view.moc"

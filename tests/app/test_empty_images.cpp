// Training images without objects (data_config.filter_empty_gt): a shapes set whose training
// split has 3 of its 10 images emptied of annotations, and one validation image of 3. Kept
// (the default), the log counts them as negatives and the run trains; left out, the log says
// how many and training runs on the other 7; both evaluate all 3 validation images; a set with
// nothing to train on is refused by name. The real engine on small images (~20 s on 2 cores).
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <vector>

#include "dataset/shapes/shapes_generator.h"
#include "specs/events.h"

namespace {

using mrcnn::events::Event;

struct Run {
  int code = -1;
  QString err;
  std::vector<Event> events;
};

Run runEngine(const QStringList& args) {
  QProcess p;
  p.start(qEnvironmentVariable("MRCNN_BIN_DIR") + "/mrcnn-engine", args);
  Run r;
  if (!p.waitForFinished(300000)) {
    p.kill();
    p.waitForFinished();
    r.err = "timed out";
    return r;
  }
  r.code = p.exitCode();
  r.err = QString::fromUtf8(p.readAllStandardError());
  for (const QByteArray& line : p.readAllStandardOutput().split('\n')) {
    if (line.trimmed().isEmpty()) continue;
    if (auto e = mrcnn::events::parseJsonLine(line.toStdString())) r.events.push_back(*e);
  }
  return r;
}

QStringList logLines(const Run& r) {
  QStringList out;
  for (const Event& e : r.events)
    if (e.type() == "log") out << QString::fromStdString(e.text());
  return out;
}

// The COCO file at `from` with the annotations of the images at `positions` (in the images
// array) removed, written to `to`.
bool emptyImages(const QString& from, const QString& to, const QSet<int>& positions) {
  QFile in(from);
  if (!in.open(QIODevice::ReadOnly)) return false;
  QJsonObject coco = QJsonDocument::fromJson(in.readAll()).object();
  QSet<qint64> ids;
  const QJsonArray images = coco["images"].toArray();
  for (int i = 0; i < images.size(); ++i)
    if (positions.contains(i)) ids.insert(images[i].toObject()["id"].toInteger());
  QJsonArray kept;
  for (const QJsonValue& a : coco["annotations"].toArray())
    if (!ids.contains(a.toObject()["image_id"].toInteger())) kept.append(a);
  coco["annotations"] = kept;
  QFile out(to);
  return out.open(QIODevice::WriteOnly) && out.write(QJsonDocument(coco).toJson()) > 0;
}

}  // namespace

class EmptyImagesTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString spec_;

  QStringList args(const QString& train_json, const QStringList& extra) const {
    const QString data = dir_.filePath("shapes");
    const QStringList sets = {
        "device=cpu", "seed=5", "total_steps=4", "train_batch_size=2", "eval_batch_size=2",
        "num_steps_per_eval=4", "save_checkpoints_steps=4", "logging_frequency=1",
        "warmup_steps=0", "target_bbox_map=0", "target_segm_map=0",
        "output_dir=" + dir_.filePath("runs"),
        "data_config.train_json_file=" + train_json,
        "data_config.train_image_dir=" + QString::fromStdString(mrcnn::dataset::shapesImageDir(data.toStdString(), "train").string()),
        "data_config.val_json_file=" + dir_.filePath("val.json"),
        "data_config.val_image_dir=" + QString::fromStdString(mrcnn::dataset::shapesImageDir(data.toStdString(), "val").string()),
        "data_config.image_size=(128, 128)", "maskrcnn_config.nlayers=10",
        "maskrcnn_config.train_rpn_pre_nms_topn=300", "maskrcnn_config.train_rpn_post_nms_topn=100"};
    QStringList a = {"--spec", spec_, "--task", "train"};
    for (const QString& s : sets + extra) a << "--set" << s;
    return a;
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    mrcnn::dataset::ShapesOptions o;
    o.root = dir_.filePath("shapes").toStdString();
    o.train_images = 10;
    o.val_images = 3;
    o.min_side = 96;
    o.max_side = 128;
    o.categories = 4;
    mrcnn::dataset::generateShapes(o);
    const auto json = [&](const char* split) {
      return QString::fromStdString(mrcnn::dataset::shapesAnnotationFile(o.root, split).string());
    };
    QVERIFY(emptyImages(json("train"), dir_.filePath("train.json"), {0, 4, 8}));
    QVERIFY(emptyImages(json("train"), dir_.filePath("nothing.json"), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
    QVERIFY(emptyImages(json("val"), dir_.filePath("val.json"), {1}));
    // The embedded spec without its generated dataset: the files above instead.
    QFile in(qEnvironmentVariable("MRCNN_SOURCE_DIR") + "/specs/shapes_resnet18.txt");
    QVERIFY(in.open(QIODevice::ReadOnly));
    QString text = QString::fromUtf8(in.readAll());
    text.remove(QRegularExpression("shapes_dataset \\{[^}]*\\}"));
    QVERIFY(!text.contains("shapes_dataset {"));
    spec_ = dir_.filePath("spec.txt");
    QFile out(spec_);
    QVERIFY(out.open(QIODevice::WriteOnly) && out.write(text.toUtf8()) > 0);
  }

  void keptAsNegatives() {
    const Run r = runEngine(args(dir_.filePath("train.json"), {"run_name=kept"}));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QStringList log = logLines(r);
    QVERIFY2(log.filter("3 of 10 training images have no annotations: they train as negatives").size() == 1,
             qPrintable(log.join('\n')));
    checkTrainedAndEvaluated(r);
  }

  void leftOut() {
    const Run r = runEngine(args(dir_.filePath("train.json"),
                                 {"run_name=filtered", "data_config.filter_empty_gt=true"}));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QStringList log = logLines(r);
    QVERIFY2(log.filter("filter_empty_gt: 3 of 10 training images have no annotations and are "
                        "left out; 7 train").size() == 1,
             qPrintable(log.join('\n')));
    QVERIFY(log.filter("train as negatives").isEmpty());
    checkTrainedAndEvaluated(r);
  }

  void nothingToTrainOnIsRefused() {
    const Run r = runEngine(args(dir_.filePath("nothing.json"),
                                 {"run_name=nothing", "data_config.filter_empty_gt=true"}));
    QCOMPARE(r.code, 4);
    const Event* error = nullptr;
    for (const Event& e : r.events)
      if (e.type() == "error") error = &e;
    QVERIFY(error);
    QCOMPARE(error->code(), std::string("bad_dataset"));
    QVERIFY2(QString::fromStdString(error->message())
                 .contains("filter_empty_gt: none of the 10 training images has an annotation"),
             error->message().c_str());
  }

 private:
  // Four steps with finite losses, and the evaluation counted every validation image, the one
  // without objects too.
  static void checkTrainedAndEvaluated(const Run& r) {
    int steps = 0, evals = 0;
    for (const Event& e : r.events) {
      if (e.type() == "progress") {
        ++steps;
        QVERIFY2(std::isfinite(e.losses().total()) && e.losses().total() > 0,
                 qPrintable(QString("step %1: loss %2").arg(e.step()).arg(e.losses().total())));
      }
      if (e.type() == "eval") {
        ++evals;
        QCOMPARE(e.images(), uint64_t{3});
      }
    }
    QCOMPARE(steps, 4);
    QCOMPARE(evals, 1);
  }
};

QTEST_GUILESS_MAIN(EmptyImagesTest)
#include "test_empty_images.moc"

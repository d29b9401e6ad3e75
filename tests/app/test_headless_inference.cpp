// The inference and dataset_stats tasks end to end, on one short real training run made with
// the launcher (headless_fixture.h): progress events and unreadable images, the spec's
// validation images by default, per-class thresholds from a file; the dataset check on the
// spec and on annotation files.
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/app/headless_fixture.h"
#include "tests/common/process_run.h"

namespace {

using mrcnn::testing::engine;
using mrcnn::testing::eventsOf;
using mrcnn::testing::headless;
using mrcnn::testing::readFile;
using mrcnn::testing::Run;
using mrcnn::testing::typesOf;
using mrcnn::testing::writeFile;

}  // namespace

class HeadlessInferenceTest : public QObject, mrcnn::testing::TrainedRunFixture {
  Q_OBJECT

 private slots:
  // --task inference: start (the number of images), progress per batch, a warning for an
  // image that cannot be read (skipped), done naming results.json and the overlays.
  void inferenceReportsProgressAndSkipsUnreadableImages() {
    const TrainedRun& t = trained();
    QVERIFY2(t.first.code == 0, qPrintable(t.first.err));
    QTemporaryDir dir;
    const QString images = dir.filePath("images");
    QVERIFY(QDir().mkpath(images));
    const QDir val(t.dir.filePath("shapes/images/val"));
    const QStringList val_images = val.entryList({"*.jpg"}, QDir::Files, QDir::Name);
    QCOMPARE(val_images.size(), 3);
    for (const QString& name : val_images)
      QVERIFY(QFile::copy(val.filePath(name), images + "/" + name));
    writeFile(dir, "images/broken.png", "this is not a png");
    const QString out = dir.filePath("out");
    const qint64 before = QFileInfo(t.run + "events.jsonl").size();

    const Run r = engine(engineArgs(
        {"--task", "inference", "--images", images, "--out", out, "--set", "eval_batch_size=2"}));
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QString bad;
    const auto events = eventsOf(r.out.toUtf8(), &bad);
    QVERIFY2(bad.isEmpty(), qPrintable(bad));
    const QStringList types = typesOf(events);
    QVERIFY2(types.first() == "start" && types.last() == "done", qPrintable(types.join(' ')));
    QCOMPARE(QString::fromStdString(events.front().task()), QString("inference"));
    QCOMPARE(events.front().total_steps(), 4u);
    std::vector<uint64_t> steps;
    int warnings = 0;
    for (const auto& e : events) {
      if (e.type() == "progress") {
        steps.push_back(e.step());
        QVERIFY(!e.has_losses());  // images, not training steps
        QVERIFY(e.images_per_second() > 0);
      }
      if (e.type() == "warning") {
        ++warnings;
        QCOMPARE(QString::fromStdString(e.code()), QString("unreadable_image"));
        QVERIFY2(QString::fromStdString(e.message()).contains(images + "/broken.png") &&
                     QString::fromStdString(e.message()).endsWith("; skipped"),
                 e.message().c_str());
      }
    }
    QCOMPARE(steps, (std::vector<uint64_t>{2, 4}));  // two batches of 2 (000001..3, broken)
    QCOMPARE(events[static_cast<size_t>(types.lastIndexOf("progress"))].eta_seconds(), 0.0);
    QCOMPARE(warnings, 1);
    const auto& done = events.back();
    QCOMPARE(QString::fromStdString(done.status()), QString("ok"));
    const QString summary = QString::fromStdString(done.summary());
    QVERIFY2(summary.startsWith("3 images (1 unreadable, skipped), ") &&
                 summary.contains("; results " + out + "/results.json; overlays in " + out),
             qPrintable(summary));
    QVERIFY(QFile::exists(out + "/results.json"));
    QCOMPARE(QDir(out).entryList({"*.png"}).size(), 3);
    // --out elsewhere: the trained run is only read, its events.jsonl untouched (the GUI's
    // predictions run so), and the start event names no run directory.
    QCOMPARE(QFileInfo(t.run + "events.jsonl").size(), before);
    QVERIFY(events.front().run_dir().empty());

    // The launcher draws images done of the total, without losses. --run-dir makes it the
    // run's inference: its events go to the run's events.jsonl as well.
    const Run h =
        headless(t.args + QStringList{"--task", "inference", "--images", images, "--out", out,
                                      "--set", "eval_batch_size=2", "--run-dir", t.run});
    QVERIFY2(h.code == 0, qPrintable(h.out + h.err));
    QCOMPARE(typesOf(eventsOf(readFile(t.run + "events.jsonl", before), &bad)), types);
    QVERIFY2(h.out.contains("inference on cpu: 4 images; run directory "), qPrintable(h.out));
    QVERIFY2(h.out.contains(
                 QRegularExpression("\nimages 2/4 \\(50%\\)  \\d+\\.\\d\\d img/s  ETA \\S+\n")),
             qPrintable(h.out));
    QVERIFY(h.out.contains("\nwarning: [unreadable_image] " + images + "/broken.png"));
    QVERIFY2(
        h.out.contains(QRegularExpression("\ninference finished after \\S+: 4 of 4 images\n"
                                          "  1 warning, 0 errors\n  3 images \\(1 unreadable")),
        qPrintable(h.out));
    QVERIFY(!h.out.contains("loss"));
  }

  // --task inference from the spec alone (the GUI's Run): the spec's validation images (the
  // shapes dataset's val split) into <run dir>/inference, the folder named in a log event.
  void inferenceWithoutImagesRunsOnTheSpecsValidationImages() {
    const TrainedRun& t = trained();
    QVERIFY2(t.first.code == 0, qPrintable(t.first.err));
    const QString val_dir = t.dir.filePath("shapes/images/val");
    const QStringList val_images = QDir(val_dir).entryList({"*.jpg"}, QDir::Files, QDir::Name);
    QCOMPARE(val_images.size(), 3);
    const QString out = t.run + "inference";
    QVERIFY(QDir(out).removeRecursively());  // the training run's overlays must not count

    const Run r = engine(engineArgs({"--task", "inference", "--set", "eval_batch_size=2"}));
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QString bad;
    const auto events = eventsOf(r.out.toUtf8(), &bad);
    QVERIFY2(bad.isEmpty(), qPrintable(bad));
    const QStringList types = typesOf(events);
    QVERIFY2(types.first() == "start" && types.last() == "done" && types.count("progress") == 2 &&
                 types.count("error") == 0 && types.count("warning") == 0,
             qPrintable(types.join(' ')));
    QCOMPARE(QString::fromStdString(events.front().task()), QString("inference"));
    QCOMPARE(events.front().total_steps(), 3u);
    bool named = false;
    for (const auto& e : events) {
      named |= e.type() == "log" && QString::fromStdString(e.text()).startsWith(
                                        "3 images from " + val_dir +
                                        " (the spec's validation images; no --images given)"
                                        "; results and overlays in " +
                                        out);
    }
    QVERIFY(named);
    const auto& done = events.back();
    QCOMPARE(QString::fromStdString(done.status()), QString("ok"));
    const QString summary = QString::fromStdString(done.summary());
    QVERIFY2(summary.startsWith("3 images, ") &&
                 summary.contains("; results " + out + "/results.json; overlays in " + out),
             qPrintable(summary));
    // An overlay per validation image; every result names one of them.
    QStringList overlays;
    for (const QString& name : val_images)
      overlays << QFileInfo(name).completeBaseName() + ".png";
    QCOMPARE(QDir(out).entryList({"*.png"}, QDir::Files, QDir::Name), overlays);
    const QJsonDocument results = QJsonDocument::fromJson(readFile(out + "/results.json"));
    QVERIFY(results.isArray());
    for (const QJsonValue& v : results.array()) {
      QVERIFY2(val_images.contains(v["file_name"].toString()),
               qPrintable(v["file_name"].toString()));
    }
    QVERIFY(QFile::exists(out + "/categories.json"));

    // A spec whose validation images are shards only: the usage error says what was looked for.
    QTemporaryDir dir;
    writeFile(dir, "val.json", "{}");  // only its existence is checked before the images
    const QString spec = writeFile(dir, "s.txt",
                                   "output_dir: \"runs\"\ndata_config {\n"
                                   "  validation_file_pattern: \"shards/val-*\"\n"
                                   "  val_json_file: \"val.json\"\n}\n");
    const Run usage = engine({"--spec", spec, "--task", "inference", "--set", "device=cpu"});
    QCOMPARE(usage.code, 2);
    QVERIFY2(usage.err.contains("--images was not given and " + spec +
                                " has no validation image folder to default to (looked for "
                                "data_config.val_image_dir and data_config.shapes_dataset"),
             qPrintable(usage.err));
  }

  // --folds: out-of-sample detections on the train split from 2 models, each trained on the
  // other fold; every train image checked by the model that did not see it; a second run
  // resumes (each fold's run is finished: nothing is trained again).
  void labelCheckFoldsTrainOnTheOtherFolds() {
    const TrainedRun& t = trained();
    QVERIFY2(t.first.code == 0, qPrintable(t.first.err));
    const QString out = t.dir.filePath("check-folds");
    const QStringList args = engineArgs({"--task", "label_check", "--folds", "2", "--fold-steps",
                                         "2", "--output-dir", out, "--score-threshold", "0.05"});
    const Run r = engine(args);
    QVERIFY2(r.code == 0, qPrintable(r.out.right(3000) + r.err));
    QSet<int> train_ids, seen;
    const QJsonObject mistakes = QJsonDocument::fromJson(readFile(out + "/mistakes.json")).object();
    for (const QJsonValue& im :
         QJsonDocument::fromJson(readFile(mistakes["annotations"].toString())).object()["images"].toArray())
      train_ids.insert(im["id"].toInt());
    QCOMPARE(train_ids.size(), 6);
    for (int f = 1; f <= 2; ++f) {
      const QString dir = out + "/folds/fold-" + QString::number(f);
      QSet<int> held, trained_on;
      for (const QJsonValue& im : QJsonDocument::fromJson(readFile(dir + "/heldout.json")).object()["images"].toArray())
        held.insert(im["id"].toInt());
      for (const QJsonValue& im : QJsonDocument::fromJson(readFile(dir + "/train.json")).object()["images"].toArray())
        trained_on.insert(im["id"].toInt());
      QCOMPARE(held.size(), 3);
      QVERIFY(!held.intersects(trained_on));
      QCOMPARE(held + trained_on, train_ids);
      QVERIFY(!seen.intersects(held));
      seen += held;
      QVERIFY2(QFile::exists(dir + "/run/checkpoints/last"), qPrintable(dir));
      QVERIFY(readFile(dir + "/spec.txt").contains("total_steps: 2"));
      for (const QJsonValue& v : QJsonDocument::fromJson(readFile(dir + "/inference/results.json")).array())
        QVERIFY(held.contains(v["image_id"].toInt()));  // each fold checked by its own model
    }
    QCOMPARE(seen, train_ids);
    QString bad;
    const auto events = eventsOf(r.out.toUtf8(), &bad);
    QCOMPARE(typesOf(events).count("progress"), 2);  // a fold each
    QCOMPARE(events.front().total_steps(), 2u);
    // The same command again: both folds' runs are done, nothing trains again.
    const QByteArray log1 = readFile(out + "/folds/fold-1/run/events.jsonl");
    const Run again = engine(args);
    QVERIFY2(again.code == 0, qPrintable(again.out.right(2000) + again.err));
    const QByteArray log2 = readFile(out + "/folds/fold-1/run/events.jsonl");
    QVERIFY(log2.startsWith(log1));
    QCOMPARE(log2.mid(log1.size()).count("\"type\":\"progress\""), 0);
  }

  // Model-assisted labelling: the detections on unlabelled images as COCO annotations to
  // correct (polygons, each with its score, the model's categories), which the dataset
  // check then reads as any annotation file.
  void inferenceWritesDraftAnnotations() {
    const TrainedRun& t = trained();
    QVERIFY2(t.first.code == 0, qPrintable(t.first.err));
    const QString val_dir = t.dir.filePath("shapes/images/val");
    const QString draft = t.dir.filePath("draft/val.json");
    const Run r = engine(engineArgs({"--task", "inference", "--image-dir", val_dir, "--out",
                                     t.dir.filePath("draft-out"), "--out-annotations", draft,
                                     "--overlay-threshold", "0"}));
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("draft annotations ("), qPrintable(r.out.right(2000)));
    const QJsonObject doc = QJsonDocument::fromJson(readFile(draft)).object();
    const QJsonArray images = doc["images"].toArray();
    QCOMPARE(images.size(), 3);
    QSet<int> ids;
    for (const QJsonValue& im : images) {
      QVERIFY(QFile::exists(val_dir + "/" + im["file_name"].toString()));
      QVERIFY(im["width"].toInt() > 0 && im["height"].toInt() > 0);
      ids.insert(im["id"].toInt());
    }
    QStringList names;
    for (const QJsonValue& c : doc["categories"].toArray()) names << c["name"].toString();
    QVERIFY2(names.contains("circle") && names.contains("square"), qPrintable(names.join(',')));
    // Every result at or above the threshold (0 here: all of them) is a draft annotation
    // unless its mask is a speck.
    const QJsonArray results =
        QJsonDocument::fromJson(readFile(t.dir.filePath("draft-out/results.json"))).array();
    const QJsonArray annotations = doc["annotations"].toArray();
    QVERIFY(annotations.size() <= results.size());
    for (const QJsonValue& a : annotations) {
      QVERIFY(ids.contains(a["image_id"].toInt()));
      QVERIFY(a["score"].toDouble() > 0 && a["score"].toDouble() <= 1);
      const QJsonArray polygons = a["segmentation"].toArray();
      QVERIFY(!polygons.isEmpty());
      for (const QJsonValue& p : polygons) QVERIFY(p.toArray().size() >= 6);
      QCOMPARE(a["bbox"].toArray().size(), 4);
    }
    const Run stats = engine({"--task", "dataset_stats", "--annotations", draft, "--output-dir",
                              t.dir.filePath("draft-stats")});
    QVERIFY2(stats.code == 0, qPrintable(stats.out + stats.err));
  }

  // --no-overlays: the same results.json, no overlay image, and the summary names no overlays.
  void inferenceWithoutOverlaysWritesTheSameResults() {
    const TrainedRun& t = trained();
    QVERIFY2(t.first.code == 0, qPrintable(t.first.err));
    const QString val_dir = t.dir.filePath("shapes/images/val");
    const Run drawn = engine(engineArgs({"--task", "inference", "--images", val_dir, "--out",
                                         t.dir.filePath("drawn")}));
    QVERIFY2(drawn.code == 0, qPrintable(drawn.out + drawn.err));
    const Run plain = engine(engineArgs({"--task", "inference", "--images", val_dir, "--out",
                                         t.dir.filePath("plain"), "--no-overlays"}));
    QVERIFY2(plain.code == 0, qPrintable(plain.out + plain.err));
    QCOMPARE(QDir(t.dir.filePath("drawn")).entryList({"*.png"}, QDir::Files).size(), 3);
    QVERIFY(QDir(t.dir.filePath("plain")).entryList({"*.png"}, QDir::Files).isEmpty());
    const QJsonArray a = QJsonDocument::fromJson(readFile(t.dir.filePath("drawn/results.json"))).array();
    const QJsonArray b = QJsonDocument::fromJson(readFile(t.dir.filePath("plain/results.json"))).array();
    QVERIFY(!a.isEmpty());
    QCOMPARE(a, b);
    QVERIFY2(plain.out.contains("results (no overlays) in"), qPrintable(plain.out.right(2000)));
    QVERIFY2(!plain.out.contains("; overlays in"), qPrintable(plain.out.right(2000)));
  }

  // label_check from the spec: the model runs on the split's images (no overlays), and the
  // finder on its results; mistakes.json and the events in <run>/label_check, image ids the
  // split's own.
  void labelCheckRunsTheSpecsModelOnASplit() {
    const TrainedRun& t = trained();
    QVERIFY2(t.first.code == 0, qPrintable(t.first.err));
    for (const QString split : {"val", "train"}) {
      const QString out = t.dir.filePath("check-" + split);
      const Run r = engine(engineArgs({"--task", "label_check", "--split", split, "--output-dir",
                                       out, "--score-threshold", "0.05"}));
      QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
      QString bad;
      const auto events = eventsOf(r.out.toUtf8(), &bad);
      QVERIFY2(bad.isEmpty(), qPrintable(bad));
      QCOMPARE(QString::fromStdString(events.front().task()), QString("label_check"));
      QCOMPARE(QString::fromStdString(events.back().status()), QString("ok"));
      QCOMPARE(eventsOf(readFile(out + "/events.jsonl"), &bad).size(), events.size());
      const QJsonObject mistakes = QJsonDocument::fromJson(readFile(out + "/mistakes.json")).object();
      QVERIFY(mistakes["results"].isNull());  // the model ran inside the check
      const QString annotations = mistakes["annotations"].toString();
      QVERIFY2(annotations.endsWith("annotations/" + split + ".json") ||
                   annotations.contains(split),
               qPrintable(annotations));
      // The results are on the split's images, by their ids; no overlay was drawn.
      QSet<int> ids;
      for (const QJsonValue& image :
           QJsonDocument::fromJson(readFile(annotations)).object()["images"].toArray())
        ids.insert(image["id"].toInt());
      QCOMPARE(ids.size(), split == "val" ? 3 : 6);
      const QJsonArray results =
          QJsonDocument::fromJson(readFile(out + "/inference/results.json")).array();
      for (const QJsonValue& v : results) QVERIFY(ids.contains(v["image_id"].toInt()));
      QVERIFY(QDir(out + "/inference").entryList({"*.png"}, QDir::Files).isEmpty());
      for (const QJsonValue& m : mistakes["mistakes"].toArray()) {
        QVERIFY(ids.contains(m["image_id"].toInt()));
        QVERIFY(m["score"].toDouble() > 0 && m["score"].toDouble() <= 1);
      }
    }
    // --split with --annotations is refused by name.
    const Run usage = engine(engineArgs({"--task", "label_check", "--split", "val",
                                         "--annotations", "a.json", "--image-dir", "."}));
    QCOMPARE(usage.code, 2);
    QVERIFY2(usage.err.contains("--split"), qPrintable(usage.err));
  }

  // --thresholds: per class, only detections at or above the class's threshold are kept
  // (results and overlays), each with the threshold in force; classes without one keep all;
  // a metrics file's F1-best section is read as well; a bad file is named with its place.
  void inferenceKeepsEachClassAtOrAboveItsThreshold() {
    const TrainedRun& t = trained();
    QVERIFY2(t.first.code == 0, qPrintable(t.first.err));
    const QJsonArray all =  // the run's unfiltered inference (the test above)
        QJsonDocument::fromJson(readFile(t.run + "inference/results.json")).array();
    QVERIFY2(all.size() > 1, "no detections to filter");
    // Thresholds: the first class seen at the median of its scores, 999 (no such class).
    const int category = all[0]["category_id"].toInt();
    std::vector<double> scores;
    for (const QJsonValue& d : all)
      if (d["category_id"].toInt() == category) scores.push_back(d["score"].toDouble());
    std::sort(scores.begin(), scores.end());
    const double threshold = scores[scores.size() / 2];
    QTemporaryDir dir;
    const QString file =
        writeFile(dir, "thresholds.json",
                  QString(R"({"iou": 0.5, "categories": {"%1": {"score": %2}, "999": 0.5}})")
                      .arg(category)
                      .arg(threshold, 0, 'g', 17)
                      .toUtf8());
    const QString out = dir.filePath("out");
    // Batched as the run it filters (batches of other sizes pad differently: fp32 scores may
    // then differ in the last bits).
    const Run r = engine(engineArgs(
        {"--task", "inference", "--thresholds", file, "--out", out, "--set", "eval_batch_size=2"}));
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QString bad;
    const auto events = eventsOf(r.out.toUtf8(), &bad);
    bool logged = false, warned = false;
    for (const auto& e : events) {
      logged |= e.type() == "log" &&
                QString::fromStdString(e.text()).startsWith("per-class thresholds from " + file);
      warned |= e.type() == "warning" && e.code() == "unknown_category";
    }
    QVERIFY(logged && warned);
    QJsonArray expected;
    for (const QJsonValue& d : all)
      if (d["category_id"].toInt() != category || d["score"].toDouble() >= threshold)
        expected.append(d);
    const QJsonArray kept = QJsonDocument::fromJson(readFile(out + "/results.json")).array();
    QCOMPARE(kept.size(), expected.size());
    QVERIFY(kept.size() < all.size());  // the median dropped some
    for (qsizetype i = 0; i < kept.size(); ++i) {
      const QJsonObject got = kept[i].toObject();
      QCOMPARE(got["score"].toDouble(), expected[i].toObject()["score"].toDouble());
      const bool thresholded = got["category_id"].toInt() == category;
      QCOMPARE(got.contains("threshold"), thresholded);
      if (thresholded) QCOMPARE(got["threshold"].toDouble(), threshold);
    }
    bool listed = false;
    for (const QJsonValue& c : QJsonDocument::fromJson(readFile(out + "/categories.json")).array())
      listed |= c["id"].toInt() == category && c["threshold"].toDouble() == threshold;
    QVERIFY(listed);
    QVERIFY2(QString::fromStdString(events.back().summary())
                 .contains(" below their class's threshold dropped"),
             events.back().summary().c_str());

    // The run's metrics file as the thresholds: its segm section is read.
    const Run metrics =
        engine(engineArgs({"--task", "inference", "--thresholds", t.run + "eval/step-4.json",
                           "--out", dir.filePath("out2")}));
    QVERIFY2(metrics.code == 0, qPrintable(metrics.out + metrics.err));
    QVERIFY2(metrics.out.contains("per-class thresholds from " + t.run +
                                  "eval/step-4.json (segm section): "),
             qPrintable(metrics.out));

    // A score out of range, named with its place; nothing is written.
    const QString wrong = writeFile(dir, "wrong.json", R"({"categories": {"1": {"score": 1.5}}})");
    const Run refused = engine(
        engineArgs({"--task", "inference", "--thresholds", wrong, "--out", dir.filePath("out3")}));
    QCOMPARE(refused.code, 4);
    QString message;
    for (const auto& e : eventsOf(refused.out.toUtf8(), &bad))
      if (e.type() == "error") message = QString::fromStdString(e.message());
    QVERIFY2(message == "--thresholds: " + wrong +
                            ": categories.\"1\".score: a score threshold lies in [0, 1]",
             qPrintable(message));
    QVERIFY(!QFile::exists(dir.filePath("out3")));
  }

  // --task dataset_stats: on the spec's train and val files (events, a warning per problem,
  // <run dir>/stats.json), and on annotation files given twice.
  void datasetStatsOnTheSpecAndOnFiles() {
    const TrainedRun& t = trained();
    QVERIFY2(t.first.code == 0, qPrintable(t.first.err));
    const Run r = engine(engineArgs({"--task", "dataset_stats"}));
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QString bad;
    const auto events = eventsOf(r.out.toUtf8(), &bad);
    QVERIFY2(bad.isEmpty(), qPrintable(bad));
    const QStringList types = typesOf(events);
    QVERIFY2(types.first() == "start" && types.last() == "done" && types.contains("log"),
             qPrintable(types.join(' ')));
    QCOMPARE(QString::fromStdString(events.front().task()), QString("dataset_stats"));
    const QJsonObject stats = QJsonDocument::fromJson(readFile(t.run + "stats.json")).object();
    const QJsonArray sets = stats["sets"].toArray();
    QCOMPARE(sets.size(), 2);
    QCOMPARE(sets[0]["name"].toString(), QString("train"));
    QCOMPARE(sets[0]["images"].toInt(), 6);
    QCOMPARE(sets[1]["images"].toInt(), 3);
    QVERIFY(sets[0]["instances"].toInt() > 0);
    QVERIFY(sets[0]["anchor_coverage"]["share_all"].toDouble() > 0);
    // A warning event for each problem in the file.
    QCOMPARE(types.count("warning"), stats["problems"].toArray().size());
    QVERIFY(!r.out.contains("repeat factors"));
    // With repeat_threshold, the factors training would use: a category in every image
    // repeats once; the table's epoch length is what training's log says.
    const Run repeats = engine(engineArgs({"--task", "dataset_stats", "--set", "data_config.repeat_threshold=1"}));
    QVERIFY2(repeats.code == 0, qPrintable(repeats.out + repeats.err));
    QString table;
    for (const auto& e : eventsOf(repeats.out.toUtf8(), &bad))
      if (e.type() == "log" && e.text().starts_with("repeat factors")) table = QString::fromStdString(e.text());
    const QRegularExpression row("\\n  (circle|square|triangle|star) +(\\d+) +([0-9.]+) +([0-9.]+)");
    int rows = 0;
    for (auto it = row.globalMatch(table); it.hasNext(); ++rows) {
      const auto m = it.next();
      const double share = m.captured(3).toDouble();
      QVERIFY2(std::abs(m.captured(4).toDouble() - std::max(1.0, std::sqrt(1.0 / share))) < 2e-3, qPrintable(table));
      QCOMPARE(m.captured(2).toInt(), static_cast<int>(std::lround(share * 6)));
    }
    QVERIFY2(rows >= 2 && table.contains(" of 6 images repeat; an epoch is "), qPrintable(table));

    const QString train = t.dir.filePath("shapes/annotations/instances_train.json");
    const QString val = t.dir.filePath("shapes/annotations/instances_val.json");
    QTemporaryDir out;
    const Run files = engine({"--task", "dataset_stats", "--annotations", train, "--annotations",
                              val, "--output-dir", out.path()});
    QVERIFY2(files.code == 0, qPrintable(files.out + files.err));
    QVERIFY2(files.out.contains("instances_train.json (" + train + "): 6 images"),
             qPrintable(files.out));
    QVERIFY(QFile::exists(out.filePath("stats.json")));
    const Run twice = engine({"--task", "evaluate", "--annotations", train, "--annotations", val,
                              "--results", "r.json"});
    QCOMPARE(twice.code, 2);
    QVERIFY(twice.err.contains("--annotations given twice"));
  }
};

QTEST_GUILESS_MAIN(HeadlessInferenceTest)
#include "test_headless_inference.moc"

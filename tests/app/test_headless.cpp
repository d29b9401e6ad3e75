// `mrcnn-workbench --headless` end to end with the real engine behind it: the train and
// evaluate tasks on one short real training run (inference and dataset_stats on their own:
// test_headless_inference.cpp), and dataset_convert from a spec (events on stdout and in
// events.jsonl, log.txt), exit codes and messages for bad input. The tasks on files through
// the launcher: test_file_tasks.cpp. The launcher's own behaviour and
// the terminal rendering: test_event_render.cpp.
#include <QCryptographicHash>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QProcess>
#include <QTemporaryDir>
#include <QtEndian>
#include <QtTest>
#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "specs/events.h"
#include "specs/spec.h"
#include "tests/app/headless_fixture.h"
#include "tests/common/process_run.h"
#include "tests/common/reference_script.h"

namespace {

using mrcnn::testing::engine;
using mrcnn::testing::eventsOf;
using mrcnn::testing::headless;
using mrcnn::testing::readFile;
using mrcnn::testing::Run;
using mrcnn::testing::sourceDir;
using mrcnn::testing::typesOf;
using mrcnn::testing::writeFile;

}  // namespace

class HeadlessTest : public QObject, mrcnn::testing::TrainedRunFixture {
  Q_OBJECT

 private slots:
  void validatePrintsTheResolvedSpec() {
    const Run r = headless({sourceDir() + "/specs/shapes_resnet18.txt", "--task", "validate"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(r.out.contains("nlayers: 18\n"));
    QVERIFY(r.out.contains("shuffle_buffer_size: 4096  # default"));
  }

  void validateAcceptsTheTaoSampleUnmodified() {
    const Run r =
        headless({sourceDir() + "/tests/specs/data/tao_maskrcnn_sample.txt", "--task", "validate"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(r.out.contains("learning_rate_steps: \"[60000, 80000, 100000]\""));
  }

  void validateRejectsWithEveryPlace() {
    QTemporaryDir dir;
    const QString spec =
        writeFile(dir, "bad.txt",
                  "total_steps: 10\n"
                  "maskrcnn_config {\n  nlayers: 12\n  min_level: 7\n}\n"
                  "data_config {\n  training_file_pattern: \"x\"\n  num_clases: 3\n}\n");
    const Run r = headless({spec, "--task", "validate"});
    QCOMPARE(r.code, 3);
    QVERIFY2(
        r.err.contains(spec + ":3:3: error: maskrcnn_config.nlayers: unsupported ResNet depth 12"),
        qPrintable(r.err));
    QVERIFY2(r.err.contains(spec + ":4:3: error: maskrcnn_config.min_level:"), qPrintable(r.err));
    QVERIFY2(r.err.contains(spec + ":8:3: error: data_config.num_clases: unknown field"),
             qPrintable(r.err));
    QVERIFY(r.err.contains("3 errors in " + spec));
    QVERIFY(r.out.isEmpty());
  }

  void overridesComeFromTheCommandLine() {
    const QString spec = sourceDir() + "/specs/shapes_resnet18.txt";
    Run r = headless({spec, "--task", "validate", "--set", "maskrcnn_config.nlayers=34", "--set",
                      "data_config.image_size=(384, 512)"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(r.out.contains("nlayers: 34\n"));
    QVERIFY(r.out.contains("image_size: \"(384, 512)\"\n"));
    r = headless({spec, "--task", "validate", "--set", "data_config.num_classes=1"});
    QCOMPARE(r.code, 3);
    QVERIFY(r.err.contains(
        "--set data_config.num_classes=1: error: data_config.num_classes: must be at least 2"));
  }

  void missingSpecAndBadTask() {
    Run r = headless({"/nonexistent/spec.txt", "--task", "validate"});
    QCOMPARE(r.code, 3);
    QVERIFY(r.err.contains("/nonexistent/spec.txt: error: no such spec file"));
    r = headless({sourceDir() + "/specs/shapes_resnet18.txt", "--task", "fly"});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("unknown task \"fly\""));
  }

  // A short real training run end to end: the shapes dataset generated, events written,
  // evaluation and checkpoints on schedule, overlays at the end; run again, it resumes from
  // the last checkpoint instead of starting over, and, finished, neither evaluates again nor
  // redraws its overlays.
  void trainRunsEvaluatesCheckpointsAndResumes() {
    const TrainedRun& t = trained();
    const QTemporaryDir& dir = t.dir;
    const QStringList& args = t.args;
    Run r = t.first;
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("shapes dataset generated"), qPrintable(r.out));
    QVERIFY(QFile::exists(dir.filePath("shapes/annotations/instances_train.json")));
    const QString run = t.run;
    // The spec as run parses back, overrides included.
    const auto loaded = mrcnn::spec::loadSpecFile((run + "spec.txt").toStdString());
    QVERIFY(loaded.ok());
    QCOMPARE(loaded.spec.data_config().shapes_dataset().train_images(), 6u);
    QCOMPARE(QString::fromStdString(loaded.spec.device()), QString("cpu"));

    QMap<QString, int> types;
    QFile events(run + "events.jsonl");
    QVERIFY(events.open(QIODevice::ReadOnly));
    QString done_status;
    for (const QByteArray& line : events.readAll().split('\n')) {
      if (line.isEmpty()) continue;
      const auto event = mrcnn::events::parseJsonLine(line.toStdString());
      QVERIFY2(event.has_value(), line.constData());
      ++types[QString::fromStdString(event->type())];
      if (event->type() == "done") done_status = QString::fromStdString(event->status());
      if (event->type() == "eval") QCOMPARE(event->bbox().stats_size(), 12);
    }
    QCOMPARE(types.value("start"), 1);
    QCOMPARE(types.value("progress"), 4);
    QCOMPARE(types.value("eval"), 2);  // at step 2 and at the end
    QVERIFY(types.value("checkpoint") >= 2);
    QCOMPARE(done_status, QString("ok"));
    QVERIFY(QFile::exists(run + "checkpoints/model.step-4.pt"));
    QVERIFY(QFile::exists(run + "eval/step-2.json"));
    QVERIFY(QFile::exists(run + "inference/results.json"));
    QCOMPARE(QDir(run + "inference").entryList({"*.png"}).size(), 3);

    r = headless(args);
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("shapes dataset up to date"), qPrintable(r.out));
    QVERIFY2(r.out.contains("resuming at step 4"), qPrintable(r.out));
    QVERIFY2(r.out.contains("nothing to train"), qPrintable(r.out));
    QVERIFY2(r.out.contains("step 4 was evaluated before"), qPrintable(r.out));
    QVERIFY2(r.out.contains("the weights did not change"), qPrintable(r.out));

    // TensorBoard's own reader agrees with events.jsonl: each progress event's losses and
    // learning rate and each evaluation's 12 stats of both types, at their steps (as 32-bit
    // floats); one event file for the run and one for its resume.
    if (qEnvironmentVariableIsEmpty("MRCNN_PYTHON")) return;
    const QString read = dir.filePath("tensorboard.json");
    const QString error = mrcnn::testing::runReferenceScript(
        "tests/engine/train/tensorboard_oracle.py", {run + "tensorboard", read});
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const QJsonObject board = QJsonDocument::fromJson(readFile(read)).object();
    QCOMPARE(board["files"].toInt(), 2);
    const QJsonObject scalars = board["scalars"].toObject();
    const auto at = [&](const QString& tag, uint64_t step) -> std::optional<double> {
      for (const QJsonValue& p : scalars[tag].toArray())
        if (static_cast<uint64_t>(p[0].toInteger()) == step) return p[2].toDouble();
      return std::nullopt;
    };
    const auto as_float = [](double v) { return static_cast<double>(static_cast<float>(v)); };
    int progress = 0, evaluations = 0;
    QString bad;
    for (const auto& e : eventsOf(readFile(run + "events.jsonl"), &bad)) {
      if (e.type() == "progress") {
        QCOMPARE(at("loss/total", e.step()), as_float(e.losses().total()));
        QCOMPARE(at("loss/mask", e.step()), as_float(e.losses().mask()));
        QCOMPARE(at("train/learning_rate", e.step()), as_float(e.lr()));
        ++progress;
      } else if (e.type() == "eval") {
        for (int i = 0; i < 12; ++i) {
          static const char* names[12] = {"AP",  "AP50", "AP75",  "APs", "APm", "APl",
                                          "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"};
          QCOMPARE(at(QString("eval/bbox_") + names[i], e.step()), as_float(e.bbox().stats(i)));
          QCOMPARE(at(QString("eval/segm_") + names[i], e.step()), as_float(e.segm().stats(i)));
        }
        // The validation losses of the same pass.
        QVERIFY(e.has_val_losses());
        QVERIFY(e.val_losses().total() > 0 && e.val_losses().mask() > 0);
        QCOMPARE(at("val_loss/total", e.step()), as_float(e.val_losses().total()));
        QCOMPARE(at("val_loss/rpn_objectness", e.step()),
                 as_float(e.val_losses().rpn_objectness()));
        QCOMPARE(at("val_loss/fast_rcnn_class", e.step()),
                 as_float(e.val_losses().fast_rcnn_class()));
        QCOMPARE(at("val_loss/mask", e.step()), as_float(e.val_losses().mask()));
        // visualize_images_summary: the 3 validation images drawn, on disk and in TensorBoard
        // (the same PNG bytes).
        QCOMPARE(e.overlay_paths_size(), 3);
        for (const std::string& path : e.overlay_paths()) {
          const QString file = QString::fromStdString(path);
          QVERIFY2(
              file.startsWith(run + "eval/overlays/step-" + QString::number(e.step()) + "/image-"),
              qPrintable(file));
          const QByteArray png = readFile(file);
          QVERIFY2(png.startsWith("\x89PNG\r\n\x1a\n") && png.mid(12, 4) == "IHDR",
                   qPrintable(file));
          const auto be32 = [&](int offset) {
            return static_cast<int>(qFromBigEndian<quint32>(png.constData() + offset));
          };
          const QString hash = QCryptographicHash::hash(png, QCryptographicHash::Sha256).toHex();
          const QJsonArray shown =
              board["images"]["eval_images/" + QFileInfo(file).baseName()].toArray();
          int found = 0;
          for (const QJsonValue& p : shown) {
            if (static_cast<uint64_t>(p[0].toInteger()) != e.step()) continue;
            QCOMPARE(p[1].toInt(), be32(16));  // IHDR: width, height
            QCOMPARE(p[2].toInt(), be32(20));
            QCOMPARE(p[3].toString(), hash);
            ++found;
          }
          QVERIFY2(found >= 1, qPrintable(file));
        }
        ++evaluations;
      }
    }
    QCOMPARE(progress, 4);
    QCOMPARE(evaluations, 2);  // at steps 2 and 4; the resume does not evaluate step 4 again
  }

  // The run's log.txt: every event in readable form, each line timestamped; a log event's
  // text never ends with a newline (which the terminal would show as an empty line).
  void theRunHasAReadableLogAndLogEventsAreLines() {
    const TrainedRun& t = trained();
    QVERIFY2(t.first.code == 0, qPrintable(t.first.err));
    QString bad;
    const auto events = eventsOf(readFile(t.run + "events.jsonl"), &bad);
    QVERIFY2(bad.isEmpty(), qPrintable(bad));
    int logs = 0;
    for (const auto& e : events) {
      if (e.type() != "log") continue;
      ++logs;
      QVERIFY2(!e.text().empty() && e.text().back() != '\n', e.text().c_str());
    }
    QVERIFY(logs >= 2);  // the runtime line and the dataset line (which came with a newline)
    QVERIFY2(!t.first.out.contains("\n\n"), qPrintable(t.first.out));  // no empty lines

    const QString log = QString::fromUtf8(readFile(t.run + "log.txt"));
    const QStringList lines = log.split('\n', Qt::SkipEmptyParts);
    QVERIFY(lines.size() >= static_cast<int>(events.size()));
    // (a continuation line, e.g. an evaluation's AP per category, is indented after the time)
    const QRegularExpression stamp(
        "^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\.\\d{3}  ( {2})?\\S");
    for (const QString& line : lines)
      QVERIFY2(stamp.match(line).hasMatch(), qPrintable(line));
    QVERIFY2(log.contains(QRegularExpression("  start train on cpu: 4 steps; spec \\S+spec.txt")),
             qPrintable(log));
    QVERIFY2(log.contains(QRegularExpression("  step 1/4  epoch \\d+  lr \\S+  loss \\d+\\.\\d{4} "
                                             "\\(rpn_objectness ")),
             qPrintable(log));
    QVERIFY2(
        log.contains(QRegularExpression("  eval at step 4 on 3 images: bbox AP \\S+ AP50 \\S+ "
                                        "AP75 \\S+; segm AP \\S+ AP50 \\S+ AP75 \\S+; metrics ")),
        qPrintable(log));
    QVERIFY(log.contains("  checkpoint at step 4: " + t.run + "checkpoints/model.step-4.pt"));
    QVERIFY(log.contains("  shapes dataset generated in "));
    // The done line carries the run's summary.
    QString done_summary;
    for (const auto& e : events)
      if (e.type() == "done") done_summary = QString::fromStdString(e.summary());
    QVERIFY(done_summary.contains("step 4 of 4"));
    QVERIFY2(log.contains(QRegularExpression(
                 "  done: ok after \\S+: " + QRegularExpression::escape(done_summary) + "\n")),
             qPrintable(log));
  }

  // num_steps_per_eval and save_checkpoints_steps 0: no evaluation or checkpoint on the way,
  // one of each at the end.
  void zeroEvaluatesAndSavesOnlyAtTheEnd() {
    QTemporaryDir dir;
    const Run r =
        engine(engineArgs({"--set", "total_steps=3", "--set", "num_steps_per_eval=0", "--set",
                           "save_checkpoints_steps=0", "--run-dir", dir.filePath("run")}));
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QString bad;
    const auto events = eventsOf(r.out.toUtf8(), &bad);
    QVERIFY2(bad.isEmpty(), qPrintable(bad));
    QList<uint64_t> evals, checkpoints;
    for (const auto& e : events) {
      if (e.type() == "eval") evals << e.step();
      if (e.type() == "checkpoint") checkpoints << e.step();
    }
    QCOMPARE(evals, QList<uint64_t>{3});
    QCOMPARE(checkpoints, QList<uint64_t>{3});
    QCOMPARE(QDir(dir.filePath("run/checkpoints")).entryList({"*.pt"}),
             QStringList{"model.step-3.pt"});
  }

  // A resumed step that was evaluated before takes its numbers from eval/step-N.json, and the
  // hooks after an evaluation see them: here the early stop, whose targets the record meets,
  // so the run given 2 more steps stops at once, training and evaluating nothing. Without the
  // record (a run killed during its final evaluation) the step is evaluated again.
  void aResumedStepTakesItsEvaluationFromTheRecord() {
    const TrainedRun& t = trained();
    QVERIFY2(t.first.code == 0, qPrintable(t.first.err));
    const QString copy = t.dir.filePath("record-copy");
    std::filesystem::copy(t.run.toStdString(), copy.toStdString(),
                          std::filesystem::copy_options::recursive);
    const QString record = copy + "/eval/step-4.json";
    QVERIFY(QFile::exists(record));
    const auto stats = [](const char* ap) { return QString("[%1,0,0,0,0,0,0,0,0,0,0,0]").arg(ap); };
    writeFile(
        t.dir, "record-copy/eval/step-4.json",
        ("{\"bbox\":{\"stats\":" + stats("0.5") + "},\"segm\":{\"stats\":" + stats("0.4") + "}}")
            .toUtf8());
    Run r = engine(engineArgs({"--run-dir", copy, "--set", "total_steps=6", "--set",
                               "target_bbox_map=0.45", "--set", "target_segm_map=0.35"}));
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QString bad;
    auto events = eventsOf(r.out.toUtf8(), &bad);
    QVERIFY2(bad.isEmpty(), qPrintable(bad));
    QStringList types = typesOf(events);
    QVERIFY2(!types.contains("progress") && !types.contains("eval") && types.last() == "done",
             qPrintable(types.join(' ')));
    // The record's numbers reach the checkpoint store too: step 4's checkpoint, now the best
    // (the forged 0.5 beats the run's own), and no other is written.
    for (const auto& e : events)
      if (e.type() == "checkpoint") QCOMPARE(e.step(), 4u);
    QString logs;
    for (const auto& e : events)
      if (e.type() == "log") logs += QString::fromStdString(e.text()) + '\n';
    QVERIFY2(logs.contains("step 4 was evaluated before (") &&
                 logs.contains("): bbox AP 0.5, segm AP 0.4; not evaluated again") &&
                 logs.contains("target mAP reached at step 4"),
             qPrintable(logs));
    QVERIFY2(QString::fromStdString(events.back().summary()).startsWith("step 4 of 6"),
             events.back().summary().c_str());
    QVERIFY(!QFile::exists(copy + "/checkpoints/model.step-6.pt"));

    QVERIFY(QFile::remove(record));
    r = engine(engineArgs({"--run-dir", copy}));
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    events = eventsOf(r.out.toUtf8(), &bad);
    types = typesOf(events);
    QVERIFY2(types.count("eval") == 1 && !types.contains("progress"), qPrintable(types.join(' ')));
    QCOMPARE(events[static_cast<size_t>(types.indexOf("eval"))].step(), 4u);
    QVERIFY(QFile::exists(record));
  }

  // --task evaluate from the spec: the run's last checkpoint on the validation set scores what
  // the training run's evaluation reported for it (the same images, the same model).
  void evaluateTheRunsCheckpointFromTheSpec() {
    const TrainedRun& t = trained();
    QVERIFY2(t.first.code == 0, qPrintable(t.first.err));
    const QString events_file = t.run + "events.jsonl";
    QString bad;
    std::optional<mrcnn::events::Event> trained_eval;
    for (const auto& e : eventsOf(readFile(events_file), &bad)) {
      if (e.type() == "eval" && e.step() == 4 && !trained_eval) trained_eval = e;
    }
    QVERIFY(trained_eval.has_value());
    const qint64 before = QFileInfo(events_file).size();
    const qint64 log_before = QFileInfo(t.run + "log.txt").size();

    const Run r = engine(engineArgs({"--task", "evaluate"}));
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    const auto events = eventsOf(r.out.toUtf8(), &bad);
    QVERIFY2(bad.isEmpty(), qPrintable(bad));
    const QStringList types = typesOf(events);
    QVERIFY2(types.first() == "start" && types.last() == "done" && types.count("eval") == 1 &&
                 types.count("error") == 0,
             qPrintable(types.join(' ')));
    QCOMPARE(QString::fromStdString(events.front().task()), QString("evaluate"));
    QCOMPARE(QString::fromStdString(events.front().run_dir()), QDir::cleanPath(t.run));
    const auto& ev = events[static_cast<size_t>(types.indexOf("eval"))];
    QCOMPARE(ev.step(), 4u);
    QCOMPARE(ev.images(), 3u);
    QCOMPARE(ev.bbox().stats_size(), 12);
    QCOMPARE(ev.segm().stats_size(), 12);
    QVERIFY(!ev.bbox().per_category_ap().empty());
    QVERIFY(!ev.bbox().category_names().empty());
    for (int i = 0; i < 12; ++i) {
      QCOMPARE(ev.bbox().stats(i), trained_eval->bbox().stats(i));
      QCOMPARE(ev.segm().stats(i), trained_eval->segm().stats(i));
    }
    // The losses on the validation images, as the training's evaluation computed them.
    QVERIFY(ev.has_val_losses() && trained_eval->has_val_losses());
    QCOMPARE(ev.val_losses().total(), trained_eval->val_losses().total());
    QCOMPARE(ev.val_losses().rpn_box(), trained_eval->val_losses().rpn_box());
    QCOMPARE(ev.val_losses().fast_rcnn_box(), trained_eval->val_losses().fast_rcnn_box());
    QCOMPARE(ev.val_losses().mask(), trained_eval->val_losses().mask());
    const QString metrics = t.run + "eval/model.step-4.json";
    QCOMPARE(QString::fromStdString(ev.metrics_path()), metrics);
    const QJsonDocument json = QJsonDocument::fromJson(readFile(metrics));
    QCOMPARE(json["bbox"]["stats"][0].toDouble(), ev.bbox().stats(0));
    QCOMPARE(json["segm"]["stats"][0].toDouble(), ev.segm().stats(0));
    const auto& done = events.back();
    QCOMPARE(QString::fromStdString(done.status()), QString("ok"));
    QVERIFY2(QString::fromStdString(done.summary())
                 .startsWith("model.step-4.pt on 3 images of " + t.dir.filePath("shapes")),
             done.summary().c_str());
    QVERIFY(QString::fromStdString(done.summary()).contains("; metrics " + metrics));

    // The same events were appended to the run's events.jsonl, and their text to log.txt.
    const auto appended = eventsOf(readFile(events_file, before), &bad);
    QCOMPARE(typesOf(appended), types);
    const QString log = QString::fromUtf8(readFile(t.run + "log.txt", log_before));
    QVERIFY2(log.contains("  start evaluate on cpu; spec ") &&
                 log.contains("  eval at step 4 on 3 images: bbox AP ") &&
                 log.contains("    validation loss ") && log.contains("  done: ok after ") &&
                 log.contains(QString::fromStdString(done.summary())),
             qPrintable(log));

    QCOMPARE(readFile(metrics), readFile(t.run + "eval/step-4.json"));

    // The spec as run names its run: evaluated through it without --run-dir, the task works in
    // that run directory (not <output_dir>/spec), with the same scores.
    const Run own_spec = engine({"--spec", t.run + "spec.txt", "--task", "evaluate"});
    QVERIFY2(own_spec.code == 0, qPrintable(own_spec.out + own_spec.err));
    const auto as_run_events = eventsOf(own_spec.out.toUtf8(), &bad);
    QVERIFY(!as_run_events.empty());
    QCOMPARE(QString::fromStdString(as_run_events.front().run_dir()), QDir::cleanPath(t.run));
    QCOMPARE(readFile(metrics), readFile(t.run + "eval/step-4.json"));

    // Four steps from scratch score 0 everywhere, which the comparison above cannot tell from
    // an evaluation that saw no detections. Evaluated against a validation set whose ground
    // truth is the checkpoint's own detections (the train run's overlays of the same images,
    // as boxes), it must score near 1: the task ran this checkpoint on these images.
    QJsonObject val =
        QJsonDocument::fromJson(readFile(t.dir.filePath("shapes/annotations/instances_val.json")))
            .object();
    const QJsonArray own =
        QJsonDocument::fromJson(readFile(t.run + "inference/results.json")).array();
    QVERIFY(own.size() > 0);
    QJsonArray annotations;
    for (const QJsonValue& d : own) {
      QJsonObject a = d.toObject();
      const QJsonArray b = a["bbox"].toArray();
      const double x = b[0].toDouble(), y = b[1].toDouble(), w = b[2].toDouble(),
                   h = b[3].toDouble();
      a.remove("score");
      a.remove("file_name");
      a["id"] = annotations.size() + 1;
      a["iscrowd"] = 0;
      a["area"] = w * h;
      a["segmentation"] = QJsonArray{QJsonArray{x, y, x + w, y, x + w, y + h, x, y + h}};
      annotations.append(a);
    }
    val["annotations"] = annotations;
    QTemporaryDir pseudo;
    const QString pseudo_json = writeFile(pseudo, "own.json", QJsonDocument(val).toJson());
    const Run own_eval = engine(engineArgs(
        {"--task", "evaluate", "--run-dir", pseudo.filePath("run"), "--checkpoint",
         t.run + "checkpoints/model.step-4.pt", "--set", "data_config.val_json_file=" + pseudo_json,
         "--set", "data_config.val_image_dir=" + t.dir.filePath("shapes/images/val")}));
    QVERIFY2(own_eval.code == 0, qPrintable(own_eval.out + own_eval.err));
    const auto own_events = eventsOf(own_eval.out.toUtf8(), &bad);
    const auto own_types = typesOf(own_events);
    QVERIFY(own_types.contains("eval"));
    const auto& own_ev = own_events[static_cast<size_t>(own_types.indexOf("eval"))];
    QVERIFY2(own_ev.bbox().stats(0) > 0.9, qPrintable(QString::number(own_ev.bbox().stats(0))));
    QVERIFY(QFile::exists(pseudo.filePath("run/eval/model.step-4.json")));

    // The launcher renders it: the table, then the summary.
    const Run h = headless(t.args + QStringList{"--task", "evaluate"});
    QVERIFY2(h.code == 0, qPrintable(h.out + h.err));
    QVERIFY2(h.out.startsWith("evaluate on cpu; run directory "), qPrintable(h.out));
    QVERIFY2(h.out.contains("evaluation at step 4 on 3 images (" + metrics + ")\n"),
             qPrintable(h.out));
    QVERIFY(h.out.contains("  AP75  IoU=0.75       area=all     maxDets=100 "));
    QVERIFY2(h.out.contains(QRegularExpression(
                 R"(\n  validation loss \d+\.\d{4}  \(rpn_obj \d+\.\d{4}  rpn_box .* mask )"
                 R"(\d+\.\d{4}\)\n)")),
             qPrintable(h.out));
    QVERIFY2(h.out.contains(QRegularExpression("\nevaluate finished after \\S+\n"
                                               "  bbox AP \\d\\.\\d{3} \\(step 4\\), segm AP ")),
             qPrintable(h.out));
    QVERIFY(!h.out.contains("{\"v\""));
  }

  void evaluateWithoutACheckpointSaysWhatItLookedFor() {
    QTemporaryDir dir;
    const QString spec = sourceDir() + "/specs/shapes_resnet18.txt";
    const Run r = engine({"--spec", spec, "--task", "evaluate", "--set", "device=cpu", "--set",
                          "output_dir=" + dir.filePath("runs"), "--set",
                          "data_config.shapes_dataset.root=" + dir.filePath("shapes")});
    QCOMPARE(r.code, 4);
    const QString run = dir.filePath("runs/shapes_resnet18");
    QVERIFY2(r.err.contains("error: no checkpoint to evaluate: no --checkpoint was given, the run "
                            "directory has no " +
                            run + "/checkpoints/last and " + spec +
                            " sets no pruned_model_path or checkpoint"),
             qPrintable(r.err));
    QString bad;
    const auto events = eventsOf(r.out.toUtf8(), &bad);
    QVERIFY2(bad.isEmpty(), qPrintable(bad));
    QCOMPARE(typesOf(events), QStringList({"start", "error", "done"}));
    QCOMPARE(QString::fromStdString(events[1].code()), QString("no_checkpoint"));
    QCOMPARE(events[1].exit_code(), 4u);
    QCOMPARE(QString::fromStdString(events[2].status()), QString("failed"));
    QVERIFY(!QFile::exists(dir.filePath("shapes")));  // failed before making the dataset
    QVERIFY(QString::fromUtf8(readFile(run + "/log.txt")).contains("  done: failed"));

    // The file-based mode is chosen by its arguments, and cannot be mixed with a spec.
    const Run mixed = engine(
        {"--spec", spec, "--task", "evaluate", "--annotations", "gt.json", "--results", "dt.json"});
    QCOMPARE(mixed.code, 2);
    QVERIFY(mixed.err.contains("evaluate takes either --spec"));
  }

  // --task dataset_convert from a spec (the GUI's Run): the shapes dataset's train and val
  // splits into <run dir>/shards with the tags train and val, events as the other tasks speak
  // them; a planted box out of its image gives TAO's warnings file and a warning event.
  void datasetConvertFromTheSpec() {
    QTemporaryDir dir;
    const QString run = dir.filePath("run");
    const QString shards = run + "/shards";
    const Run r = engine({"--spec", sourceDir() + "/specs/shapes_resnet18.txt", "--task",
                          "dataset_convert", "--run-dir", run, "--set",
                          "data_config.shapes_dataset.root=" + dir.filePath("shapes"), "--set",
                          "data_config.shapes_dataset.train_images=4", "--set",
                          "data_config.shapes_dataset.val_images=2"});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QString bad;
    const auto events = eventsOf(r.out.toUtf8(), &bad);
    QVERIFY2(bad.isEmpty(), qPrintable(bad));
    const QStringList types = typesOf(events);
    QVERIFY2(types.first() == "start" && types.last() == "done" && types.count("error") == 0,
             qPrintable(types.join(' ')));
    QCOMPARE(QString::fromStdString(events.front().task()), QString("dataset_convert"));
    QCOMPARE(QString::fromStdString(events.front().run_dir()), run);
    QStringList logs;
    for (const auto& e : events) {
      if (e.type() == "log") logs << QString::fromStdString(e.text());
    }
    const auto logged = [&](const QString& text) {
      return std::any_of(logs.begin(), logs.end(),
                         [&](const QString& l) { return l.contains(text); });
    };
    QVERIFY2(logged("train:\n  read 4 images and ") && logged("val:\n  read 2 images and ") &&
                 logged("  report: " + shards + "/train_report.json\n") &&
                 logged("  report: " + shards + "/val_report.json\n"),
             qPrintable(logs.join("\n---\n")));
    const auto& done = events.back();
    QCOMPARE(QString::fromStdString(done.status()), QString("ok"));
    QVERIFY2(QString::fromStdString(done.summary()).startsWith("converted train (4 images, ") &&
                 done.summary().find(" and val (2 images, ") != std::string::npos &&
                 QString::fromStdString(done.summary())
                     .contains(") into " + shards + "; TAO warnings: none; reports: " + shards +
                               "/train_report.json and " + shards + "/val_report.json"),
             done.summary().c_str());
    QCOMPARE(QDir(shards).entryList({"train-*"}, QDir::Files, QDir::Name),
             (QStringList{"train-00000-of-00004", "train-00001-of-00004", "train-00002-of-00004",
                          "train-00003-of-00004"}));
    QCOMPARE(QDir(shards).entryList({"val-*"}, QDir::Files, QDir::Name),
             (QStringList{"val-00000-of-00002", "val-00001-of-00002"}));
    QCOMPARE(QJsonDocument::fromJson(readFile(shards + "/val_report.json"))["summary"].toObject(),
             QJsonObject());
    QCOMPARE(typesOf(eventsOf(readFile(run + "/events.jsonl"), &bad)), types);

    // A training set of the spec's own with a box past its image: TAO's box warning.
    QJsonObject coco =
        QJsonDocument::fromJson(readFile(dir.filePath("shapes/annotations/instances_val.json")))
            .object();
    QJsonArray annotations = coco["annotations"].toArray();
    QJsonObject first = annotations[0].toObject();
    QJsonArray box = first["bbox"].toArray();
    box[2] = 10000.0;
    first["bbox"] = box;
    annotations[0] = first;
    coco["annotations"] = annotations;
    const QString faulty = writeFile(dir, "faulty.json", QJsonDocument(coco).toJson());
    const QString spec = writeFile(dir, "faulty.txt",
                                   "output_dir: \"runs\"\ndata_config {\n  train_image_dir: \"" +
                                       dir.filePath("shapes/images/val").toUtf8() +
                                       "\"\n  train_json_file: \"" + faulty.toUtf8() + "\"\n}\n");
    const QString run2 = dir.filePath("run2");
    const Run f = engine({"--spec", spec, "--task", "dataset_convert", "--run-dir", run2});
    QVERIFY2(f.code == 0, qPrintable(f.out + f.err));
    const auto faulty_events = eventsOf(f.out.toUtf8(), &bad);
    QVERIFY2(bad.isEmpty(), qPrintable(bad));
    int box_warnings = 0;
    for (const auto& e : faulty_events) {
      if (e.type() != "warning") continue;
      QCOMPARE(QString::fromStdString(e.code()), QString("box_out_of_bounds"));
      QVERIFY2(QString::fromStdString(e.message()) ==
                   "train: 1 problem of kind box_out_of_bounds; each listed in " + run2 +
                       "/shards/train_report.json",
               e.message().c_str());
      ++box_warnings;
    }
    QCOMPARE(box_warnings, 1);
    const QString warnings_file = run2 + "/shards/train_warnings.json";
    QVERIFY(QFile::exists(warnings_file));
    const QString summary = QString::fromStdString(faulty_events.back().summary());
    QVERIFY2(summary.contains("; TAO warnings: " + warnings_file + " (1 image); reports: " + run2 +
                              "/shards/train_report.json"),
             qPrintable(summary));
    QVERIFY(!summary.contains("val"));

    // Data paths the spec leaves out: the field named, as an error event.
    const QString half = writeFile(
        dir, "half.txt",
        "output_dir: \"runs\"\ndata_config {\n  val_json_file: \"" + faulty.toUtf8() + "\"\n}\n");
    const Run h = engine({"--spec", half, "--task", "dataset_convert", "--run-dir", run2});
    QCOMPARE(h.code, 3);
    QVERIFY2(h.err.contains(half + ": data_config.val_image_dir: not set, but val_json_file is"),
             qPrintable(h.err));
    const auto half_events = eventsOf(h.out.toUtf8(), &bad);
    QVERIFY(!half_events.empty());
    QCOMPARE(QString::fromStdString(half_events.back().status()), QString("failed"));
    // The file-based mode's options do not mix with a spec.
    const Run mixed = engine({"--spec", half, "--task", "dataset_convert", "--image-dir", run2});
    QCOMPARE(mixed.code, 2);
    QVERIFY(mixed.err.contains("dataset_convert takes either --spec"));
  }

  void trainNamesAMissingDataset() {
    QTemporaryDir dir;
    const QString spec = writeFile(dir, "s.txt",
                                   "total_steps: 10\noutput_dir: \"runs\"\n"
                                   "data_config {\n  train_image_dir: \"nowhere\"\n"
                                   "  train_json_file: \"nowhere.json\"\n}\n");
    const Run r = headless({spec, "--set", "device=cpu"});
    QCOMPARE(r.code, 4);
    QVERIFY2(
        r.err.contains("data_config.train_json_file: no such file " + dir.filePath("nowhere.json")),
        qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(HeadlessTest)
#include "test_headless.moc"

// `mrcnn-workbench --headless` end to end: the launcher, the engine behind it, exit codes;
// and the terminal rendering of the engine's events (app/event_render.h), fed event lines.
#include <signal.h>

#include <QProcess>
#include <QTemporaryDir>
#include <QDir>
#include <QMap>
#include <QtTest>

#include "app/event_render.h"
#include "specs/events.h"
#include "specs/spec.h"

namespace {

struct Run {
  int code = -1;
  QString out, err;
};

QString binDir() {
  return qEnvironmentVariable("MRCNN_BIN_DIR");
}
QString sourceDir() {
  return qEnvironmentVariable("MRCNN_SOURCE_DIR");
}

Run headless(const QStringList& args,
             const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment(),
             int timeout_ms = 300000) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(binDir() + "/mrcnn-workbench", QStringList{"--headless"} + args);
  Run r;
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.err = "timed out";
    return r;
  }
  r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

QString writeFile(const QTemporaryDir& dir, const QString& name, const QByteArray& text,
                  bool executable = false) {
  const QString path = dir.filePath(name);
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(path));
  f.write(text);
  f.close();
  if (executable) f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
  return path;
}

std::string progressLine(uint64_t step, double total_loss, double time) {
  mrcnn::events::Event e;
  e.set_type("progress");
  e.set_time(time);
  e.set_step(step);
  e.set_epoch(1);
  e.set_lr(0.02);
  e.set_images_per_second(4.25);
  e.set_eta_seconds(3723);
  auto* l = e.mutable_losses();
  l->set_total(total_loss);
  l->set_rpn_objectness(0.125);
  l->set_rpn_box(0.0625);
  l->set_fast_rcnn_class(0.25);
  l->set_fast_rcnn_box(0.5);
  l->set_mask(0.75);
  return mrcnn::events::toJsonLine(e);
}

std::string startLine() {
  mrcnn::events::Event e;
  e.set_type("start");
  e.set_time(1000);
  e.set_task("train");
  e.set_device("cpu");
  e.set_total_steps(200);
  e.set_run_dir("runs/shapes");
  return mrcnn::events::toJsonLine(e);
}

std::string evalLine() {
  mrcnn::events::Event e;
  e.set_type("eval");
  e.set_step(100);
  e.set_images(50);
  e.set_metrics_path("eval/step-100.json");
  const double bbox[12] = {0.512, 0.8, 0.6, -1, 0.4, 0.55, 0.3, 0.5, 0.6, -1, 0.45, 0.65};
  for (double v : bbox) {
    e.mutable_bbox()->add_stats(v);
    e.mutable_segm()->add_stats(v == -1 ? -1 : v - 0.1);
  }
  (*e.mutable_bbox()->mutable_per_category_ap())[3] = 0.7;
  (*e.mutable_bbox()->mutable_category_names())[3] = "star";
  (*e.mutable_segm()->mutable_per_category_ap())[3] = 0.65;
  return mrcnn::events::toJsonLine(e);
}

}  // namespace

class HeadlessTest : public QObject {
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
  // the last checkpoint instead of starting over.
  void trainRunsEvaluatesCheckpointsAndResumes() {
    QTemporaryDir dir;
    const QString spec = sourceDir() + "/specs/shapes_resnet18.txt";
    const QStringList args = {spec,
                              "--set", "data_config.shapes_dataset.root=" + dir.filePath("shapes"),
                              "--set", "data_config.shapes_dataset.train_images=6",
                              "--set", "data_config.shapes_dataset.val_images=3",
                              "--set", "output_dir=" + dir.filePath("runs"),
                              "--set", "device=cpu",
                              "--set", "train_batch_size=2",
                              "--set", "total_steps=4",
                              "--set", "num_steps_per_eval=2",
                              "--set", "save_checkpoints_steps=2",
                              "--set", "logging_frequency=1"};
    Run r = headless(args);
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("shapes dataset generated"), qPrintable(r.out));
    QVERIFY(QFile::exists(dir.filePath("shapes/annotations/instances_train.json")));
    const QString run = dir.filePath("runs/shapes_resnet18/");
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

  void evaluateTaskWithoutAModel() {
    QTemporaryDir dir;
    const QString gt = qEnvironmentVariable("MRCNN_SHARED_DIR") + "/data/coco_eval_bbox/gt.json";
    const QString dt = qEnvironmentVariable("MRCNN_SHARED_DIR") + "/data/coco_eval_bbox/dt.json";
    const QString metrics = dir.filePath("metrics.json");
    Run r = headless(
        {"--task", "evaluate", "--annotations", gt, "--results", dt, "--metrics-out", metrics});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(r.out.contains("Evaluate annotation type *bbox*"));
    QVERIFY(r.out.contains(
        " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.504\n"));
    QVERIFY(!r.out.contains("*segm*"));  // box results: bbox only unless asked
    QFile f(metrics);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray json = f.readAll();
    QVERIFY(json.startsWith("{\"bbox\":{\"stats\":[0.5036473243630208,"));
    QVERIFY(json.contains("\"per_category\":{\"1\":"));

    // A broken results file: the file, the byte and the key path; nothing written.
    const QString bad =
        writeFile(dir, "bad.json",
                  "[{\"image_id\": 42, \"category_id\": 18, \"bbox\": [1, 2, \"x\", 4], "
                  "\"score\": 0.5}]");
    QFile::remove(metrics);
    r = headless(
        {"--task", "evaluate", "--annotations", gt, "--results", bad, "--metrics-out", metrics});
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains(bad + ": byte 52: [0].bbox[2]: expected a number"), qPrintable(r.err));
    QVERIFY(!QFile::exists(metrics));

    // A result on an image the ground truth does not have is an error, as in pycocotools.
    const QString unknown =
        writeFile(dir, "unknown.json",
                  "[{\"image_id\": 7, \"category_id\": 18, \"bbox\": [1, 2, 3, 4], "
                  "\"score\": 0.5}]");
    r = headless({"--task", "evaluate", "--annotations", gt, "--results", unknown});
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains("[0].image_id: image 7 is not in the ground truth"), qPrintable(r.err));

    r = headless({"--task", "evaluate", "--annotations", gt});
    QCOMPARE(r.code, 2);
    r = headless(
        {"--task", "evaluate", "--annotations", gt, "--results", dt, "--iou-type", "mask"});
    QCOMPARE(r.code, 2);
  }

  void launcherPassesTheEngineExitCodeAndSignals() {
    QTemporaryDir dir;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("MRCNN_ENGINE", writeFile(dir, "exit7.sh", "#!/bin/sh\nexit 7\n", true));
    QCOMPARE(headless({"spec.txt"}, env).code, 7);

    env.insert("MRCNN_ENGINE", writeFile(dir, "killed.sh", "#!/bin/sh\nkill -9 $$\n", true));
    const Run killed = headless({"spec.txt"}, env);
    QCOMPARE(killed.code, 128 + 9);
    QVERIFY(killed.err.contains("killed by signal 9"));

    // SIGTERM to the launcher alone reaches the engine, which decides how to stop.
    env.insert("MRCNN_ENGINE", writeFile(dir, "graceful.sh",
                                         "#!/bin/sh\ntrap 'echo stopping; exit 0' TERM\n"
                                         "echo ready\nwhile true; do sleep 0.05; done\n",
                                         true));
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(binDir() + "/mrcnn-workbench", {"--headless", "spec.txt"});
    QVERIFY(p.waitForReadyRead(10000));
    ::kill(static_cast<pid_t>(p.processId()), SIGTERM);
    QVERIFY(p.waitForFinished(10000));
    QCOMPARE(p.exitCode(), 0);
    QVERIFY(QString::fromUtf8(p.readAllStandardOutput()).contains("stopping"));
  }

  // --- rendering ------------------------------------------------------------------------------
  void plainRenderingOfEveryEventType() {
    mrcnn::app::EventRenderer r({/*tty=*/false, 100, 10});
    QString out;
    const auto feed = [&](const std::string& line) { out += QString::fromStdString(r.line(line)); };
    feed(startLine());
    feed("shapes dataset up to date (450 images)");  // not an event: unchanged
    feed("{ not json at all");                       // not an event either
    feed(progressLine(20, 1.5, 1010));
    feed(evalLine());
    feed(
        R"({"v":1,"type":"checkpoint","time":1020,"path":"runs/shapes/checkpoints/model.step-100.pt","step":100,"best":true})");
    feed(
        R"({"v":1,"type":"warning","time":1021,"code":"corrupt_image","message":"images/7.jpg: cannot decode","imageId":"7"})");
    feed(
        R"({"v":1,"type":"error","time":1022,"code":"nan_loss","message":"step 120: loss mask is NaN","exitCode":1})");
    feed(R"({"v":1,"type":"log","time":1023,"text":"a log line"})");
    feed(
        R"({"v":1,"type":"done","time":1100,"status":"stopped","summary":"stopped at step 120","elapsedSeconds":100})");
    out += QString::fromStdString(r.finish(0));

    QVERIFY2(out.contains("train on cpu: 200 steps; run directory runs/shapes\n"), qPrintable(out));
    QVERIFY(out.contains("\nshapes dataset up to date (450 images)\n"));
    QVERIFY(out.contains("\n{ not json at all\n"));
    QVERIFY2(
        out.contains("step 20/200 (10%)  4.25 img/s  ETA 1h02m03s  lr 0.02  loss 1.5000  "
                     "(rpn_obj 0.1250  rpn_box 0.0625  cls 0.2500  box 0.5000  mask 0.7500)\n"),
        qPrintable(out));
    QVERIFY(out.contains("evaluation at step 100 on 50 images (eval/step-100.json)\n"));
    QVERIFY2(out.contains("  AP    IoU=0.50:0.95  area=all     maxDets=100   0.512   0.412\n"),
             qPrintable(out));
    QVERIFY(out.contains("  APs   IoU=0.50:0.95  area=small   maxDets=100       -       -\n"));
    QVERIFY(out.contains("  ARl   IoU=0.50:0.95  area=large   maxDets=100   0.650   0.550\n"));
    QVERIFY2(out.contains("  AP star" + QString(41, ' ') + "0.700   0.650\n"), qPrintable(out));
    QCOMPARE(out.count(QRegularExpression("\n  AR")), 6);
    QVERIFY(out.contains(
        "checkpoint at step 100: runs/shapes/checkpoints/model.step-100.pt  (best so far)\n"));
    QVERIFY(out.contains("warning: [corrupt_image] images/7.jpg: cannot decode (image 7)\n"));
    QVERIFY(out.contains("error: [nan_loss] step 120: loss mask is NaN\n"));
    QVERIFY(out.contains("\na log line\n"));
    QVERIFY2(out.contains("train stopped after 1m40s: step 20 of 200, loss 1.5000\n"
                          "  best bbox AP 0.512 (step 100), segm AP 0.412 (step 100)\n"
                          "  last checkpoint runs/shapes/checkpoints/model.step-100.pt\n"
                          "  1 warning, 1 error\n  stopped at step 120\n"),
             qPrintable(out));
    QVERIFY(!out.contains("\033"));  // no control codes off a terminal
    QVERIFY(!out.contains("\r"));
    QCOMPARE(r.warnings(), 1);
  }

  void terminalRenderingRedrawsTheBar() {
    mrcnn::app::EventRenderer r({/*tty=*/true, 100, 3});
    std::string out = r.line(startLine());
    std::vector<std::string> frames;
    for (int i = 1; i <= 7; ++i) {
      frames.push_back(r.line(progressLine(static_cast<uint64_t>(i * 20), 2.0 / i, 1000 + i)));
    }
    // Each progress event clears the line and redraws the bar, without a newline.
    for (const std::string& f : frames) {
      QVERIFY(f.rfind("\r\033[K") != std::string::npos);
      QVERIFY(f.back() != '\n');
    }
    const std::string first_bar = "step 20/200 [" + std::string(4, '#') + std::string(36, '.') +
                                  "]  10%  4.25 img/s  ETA 1h02m03s  loss 2.0000";
    QVERIFY2(frames[0].ends_with("\n" + first_bar), frames[0].c_str());
    QVERIFY2(frames[1].starts_with("\r\033[Kstep 40/200 ["), frames[1].c_str());  // in place
    QVERIFY2(frames[6].ends_with("step 140/200 [" + std::string(28, '#') + std::string(12, '.') +
                                 "]  70%  4.25 img/s  ETA 1h02m03s  loss 0.2857"),
             frames[6].c_str());
    // The loss components every 3 progress events (1st, 4th, 7th), as committed lines.
    int loss_lines = 0;
    for (const std::string& f : frames)
      loss_lines += f.find("(rpn_obj") != std::string::npos;
    QCOMPARE(loss_lines, 3);
    QVERIFY(frames[3].find("\r\033[Kstep 80  lr 0.02  loss 0.5000  (rpn_obj") == 0);
    // Other text goes above the bar, which is drawn again under it.
    const std::string passthrough = r.line("some engine text");
    QVERIFY2(passthrough.starts_with("\r\033[Ksome engine text\n") &&
                 passthrough.ends_with("loss 0.2857"),
             passthrough.c_str());
    // Done commits the bar with a newline and prints the summary below it.
    const std::string done = r.line(R"({"v":1,"type":"done","time":1100,"status":"ok"})");
    QVERIFY2(done.starts_with("\ntrain finished after 1m40s: step 140 of 200"), done.c_str());
    QCOMPARE(r.finish(0), std::string());
  }

  void anEngineThatDiesWithoutDoneStillGetsASummary() {
    mrcnn::app::EventRenderer r({/*tty=*/false, 100, 10});
    r.line(startLine());
    r.line(progressLine(40, 0.9, 1010));
    const std::string out = r.finish(137);
    QVERIFY2(out == "train killed by signal 9: step 40 of 200, loss 0.9000\n", out.c_str());
    mrcnn::app::EventRenderer quiet;
    QCOMPARE(quiet.line("nlayers: 18"), std::string("nlayers: 18\n"));
    QCOMPARE(quiet.finish(0), std::string());  // validate: no events, no summary
    // A task that failed before any event already said why on stderr.
    QCOMPARE(quiet.finish(3), std::string());
    QCOMPARE(quiet.finish(128 + 9), std::string("task killed by signal 9\n"));
    QCOMPARE(mrcnn::app::EventRenderer::duration(59.6), std::string("1m00s"));
    QCOMPARE(mrcnn::app::EventRenderer::duration(3600 * 25 + 61), std::string("25h01m01s"));
  }

  void launcherRendersAnEnginesEvents() {
    QTemporaryDir dir;
    QByteArray script = "#!/bin/sh\necho 'plain text from the engine'\n";
    for (const std::string& line : {startLine(), progressLine(20, 1.5, 1010), evalLine()})
      script += "echo '" + QByteArray::fromStdString(line) + "'\n";
    script += "printf 'last line without newline'\nexit 5\n";
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("MRCNN_ENGINE", writeFile(dir, "events.sh", script, true));
    const Run r = headless({"spec.txt"}, env);
    QCOMPARE(r.code, 5);
    QVERIFY2(r.out.startsWith("plain text from the engine\ntrain on cpu: 200 steps"),
             qPrintable(r.out));
    QVERIFY(r.out.contains("step 20/200 (10%)  4.25 img/s"));
    QVERIFY(r.out.contains("  AP50  IoU=0.50       area=all     maxDets=100   0.800   0.700\n"));
    QVERIFY(r.out.contains("\nlast line without newline\n"));
    QVERIFY2(r.out.endsWith("train failed with exit code 5: step 20 of 200, loss 1.5000\n"
                            "  best bbox AP 0.512 (step 100), segm AP 0.412 (step 100)\n"),
             qPrintable(r.out));
    QVERIFY(!r.out.contains("{\"v\""));  // no raw event reached the terminal
  }
};

QTEST_GUILESS_MAIN(HeadlessTest)
#include "test_headless.moc"

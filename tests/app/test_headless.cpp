// `mrcnn-workbench --headless` end to end: the launcher, the engine behind it, exit codes.
#include <signal.h>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

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

  void trainPreparesTheRunAndTheShapesDataset() {
    QTemporaryDir dir;
    const QString spec = sourceDir() + "/specs/shapes_resnet18.txt";
    const QStringList args = {spec,
                              "--set",
                              "data_config.shapes_dataset.root=" + dir.filePath("shapes"),
                              "--set",
                              "data_config.shapes_dataset.train_images=6",
                              "--set",
                              "data_config.shapes_dataset.val_images=3",
                              "--set",
                              "output_dir=" + dir.filePath("runs"),
                              "--set",
                              "device=cpu"};
    Run r = headless(args);
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("shapes dataset generated"), qPrintable(r.out));
    QVERIFY(QFile::exists(dir.filePath("shapes/annotations/instances_train.json")));
    QVERIFY(QFile::exists(dir.filePath("shapes/annotations/instances_val.json")));
    const QString run_spec = dir.filePath("runs/shapes_resnet18/spec.txt");
    QVERIFY(QFile::exists(run_spec));
    // The spec as run parses back, overrides included.
    const auto loaded = mrcnn::spec::loadSpecFile(run_spec.toStdString());
    QVERIFY(loaded.ok());
    QCOMPARE(loaded.spec.data_config().shapes_dataset().train_images(), 6u);
    QCOMPARE(QString::fromStdString(loaded.spec.device()), QString("cpu"));

    r = headless(args);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(r.out.contains("shapes dataset up to date"));
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
    Run r = headless({"--task", "evaluate", "--annotations", gt, "--results", dt, "--metrics-out",
                      metrics});
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
    const QString bad = writeFile(dir, "bad.json",
                                  "[{\"image_id\": 42, \"category_id\": 18, \"bbox\": [1, 2, \"x\", 4], "
                                  "\"score\": 0.5}]");
    QFile::remove(metrics);
    r = headless({"--task", "evaluate", "--annotations", gt, "--results", bad, "--metrics-out", metrics});
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains(bad + ": byte 52: [0].bbox[2]: expected a number"), qPrintable(r.err));
    QVERIFY(!QFile::exists(metrics));

    // A result on an image the ground truth does not have is an error, as in pycocotools.
    const QString unknown = writeFile(dir, "unknown.json",
                                      "[{\"image_id\": 7, \"category_id\": 18, \"bbox\": [1, 2, 3, 4], "
                                      "\"score\": 0.5}]");
    r = headless({"--task", "evaluate", "--annotations", gt, "--results", unknown});
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains("[0].image_id: image 7 is not in the ground truth"), qPrintable(r.err));

    r = headless({"--task", "evaluate", "--annotations", gt});
    QCOMPARE(r.code, 2);
    r = headless({"--task", "evaluate", "--annotations", gt, "--results", dt, "--iou-type", "mask"});
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
};

QTEST_GUILESS_MAIN(HeadlessTest)
#include "test_headless.moc"

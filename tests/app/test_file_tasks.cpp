// The tasks on annotation files through `mrcnn-workbench --headless`: the launcher starts
// mrcnn-data for them (no LibTorch, no OpenCV decoder: its libraries checked), not the engine;
// mrcnn-data refuses a task that runs a model; evaluate on a results file end to end with its
// bad inputs.
#include <QFile>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QtTest>
#include <vector>

#include "specs/events.h"
#include "tests/app/headless_fixture.h"
#include "tests/common/process_run.h"

namespace {

using mrcnn::testing::eventsOf;
using mrcnn::testing::headless;
using mrcnn::testing::Run;
using mrcnn::testing::typesOf;
using mrcnn::testing::writeFile;

}  // namespace

class FileTasksTest : public QObject {
  Q_OBJECT

 private slots:
  // The tasks on files run in mrcnn-data, which loads neither LibTorch nor OpenCV's decoders:
  // the headless launcher starts it (not the engine) for them, and it refuses the others.
  void tasksOnFilesRunInMrcnnData() {
    QTemporaryDir dir;
    const QString input =
        qEnvironmentVariable("MRCNN_SHARED_DIR") + "/data/labelme_voc2011/data_annotated";
    QProcessEnvironment no_engine = QProcessEnvironment::systemEnvironment();
    no_engine.insert("MRCNN_ENGINE", dir.filePath("no-engine"));
    Run r = headless({"--raw-events", "--task", "dataset_import", "--format", "labelme",
                      "--input", input, "--output-dir", dir.filePath("imported")},
                     no_engine);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QString bad;
    const std::vector<mrcnn::events::Event> events = eventsOf(r.out.toUtf8(), &bad);
    QVERIFY2(bad.isEmpty(), qPrintable(bad));
    QCOMPARE(typesOf(events).first(), QString("start"));
    QCOMPARE(typesOf(events).last(), QString("done"));
    QVERIFY(QFile::exists(dir.filePath("imported/annotations/instances_train.json")));

    // Without mrcnn-data the launcher says which program and which variable.
    QProcessEnvironment no_data = QProcessEnvironment::systemEnvironment();
    no_data.insert("MRCNN_DATA", dir.filePath("no-data"));
    r = headless({"--task", "dataset_import", "--input", input, "--output-dir",
                  dir.filePath("again")},
                 no_data);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(dir.filePath("no-data")) && r.err.contains("MRCNN_DATA"),
             qPrintable(r.err));

    // A task that runs a model: refused with the program to use.
    r = mrcnn::testing::runProcess(mrcnn::testing::binDir() + "/mrcnn-data",
                                   {"--spec", "spec.txt", "--task", "evaluate"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("mrcnn-data: --task evaluate with --spec runs a model") &&
                 r.err.contains("mrcnn-engine"),
             qPrintable(r.err));

    // What makes it start fast: no LibTorch, no OpenCV decoder, no Qt among its libraries.
    r = mrcnn::testing::runProcess("readelf", {"-d", mrcnn::testing::binDir() + "/mrcnn-data"});
    if (r.code != 0) QSKIP("readelf (binutils) is not installed: the libraries are not checked");
    QVERIFY2(r.out.contains("libsimdjson"), qPrintable(r.out));
    for (const char* lib : {"libtorch", "libc10", "libopencv_imgcodecs", "libQt6"})
      QVERIFY2(!r.out.contains(lib), qPrintable(QString(lib) + " is needed:\n" + r.out));
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
};

QTEST_GUILESS_MAIN(FileTasksTest)
#include "test_file_tasks.moc"

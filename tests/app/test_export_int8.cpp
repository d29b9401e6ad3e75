// The int8 export (--task export --data_type int8) through the real executables: the seeded
// R50-FPN of tests/engine/export_parity.py on real photos, its QDQ model checked by the ONNX
// checker and run by ONNX Runtime (the format's oracle) and by OpenVINO (the export's own check
// and the inference backend), each against the fp32 detections; the calibration cache written,
// reused and refused; the shapes model's int8 accuracy cost in the report; bad flags.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include "tests/common/export_inputs.h"
#include "tests/common/process_run.h"
#include "tests/common/reference_script.h"

namespace {

using mrcnn::testing::engine;
using mrcnn::testing::explain;
using mrcnn::testing::readJsonObject;
using mrcnn::testing::Run;
using mrcnn::testing::runReferenceScript;
using mrcnn::testing::sourceDir;

constexpr int kTimeoutMs = 300000;

// What int8 keeps of fp32's detections on these photos with the seeded model, within
// kInt8Tolerance (box 5%, score 0.05, mask IoU 0.8): measured 0.39 on 2026-11-29 (AMD EPYC,
// AVX2). The seeded model's detections are hundreds of near-identical boxes whose scores
// differ in the third digit, so any noise reorders them (ONNX Runtime's int8 and OpenVINO's
// agree with each other no better); the quantisation itself is checked on the FPN's outputs
// (kMinDb) and on the trained shapes model's detections (kShapesAgreedShare).
constexpr double kAgreedShare = 0.3;
// Signal to quantisation noise of every FPN level, in dB, int8 against fp32 in both runtimes:
// measured 38.1 to 40.8 with the biases corrected, 34.0 to 35.9 without (2026-12-01, AMD EPYC
// AVX-512, three photos; 32.8 to 35.9 without on an AVX2 EPYC), so a correction that does
// nothing fails here.
constexpr double kMinDb = 36;
// What int8 keeps of fp32's detections with the shapes model after 150 steps: measured 0.55
// (its 50 detections an image are mostly low scores close to each other as well); the AP
// cost is the measure that matters (measured -0.009 bbox, -0.004 segm).
constexpr double kShapesAgreedShare = 0.45;

QByteArray readBytes(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QString compact(const QJsonObject& o) {
  return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

}  // namespace

class ExportInt8Test : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString fixtureError_;
  QString tvSpec_, shapesSpec_;

  QString path(const QString& name) const { return dir_.filePath(name); }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    tvSpec_ = sourceDir() + "/specs/coco_torchvision_r50.txt";
    shapesSpec_ = sourceDir() + "/specs/shapes_resnet18.txt";
    fixtureError_ = mrcnn::testing::r50Inputs(dir_.path());
  }

  // The R50-FPN calibrated on the photos: model.int8.onnx beside model.onnx, the quantised and
  // float layers listed with why, and the int8 detections agree with fp32's in OpenVINO (the
  // report), in ONNX Runtime and through the OpenVINO inference backend.
  void r50Int8AgreesWithFp32InEveryRuntime() {
    QVERIFY2(fixtureError_.isEmpty(), qPrintable(fixtureError_));
    const QString out = path("tv_int8");
    const Run r = engine({"--spec", tvSpec_, "--task", "export", "--checkpoint", path("model.pt"),
                          "--output-dir", out, "--images", path("images"), "--data_type", "int8",
                          "--cal_image_dir", path("images"), "--cal_cache_file", path("cal.json"),
                          "--set", "device=cpu"},
                         2 * kTimeoutMs);  // calibration, two checks and the parity: R50 on 2 cores
    QVERIFY2(r.code == 0, qPrintable(explain(r)));
    for (const char* file : {"model.onnx", "model.int8.onnx", "calibration_cache.json"})
      QVERIFY2(QFile::exists(out + "/" + file), file);
    QVERIFY(QFile::exists(path("cal.json")));
    const QJsonObject int8 = readJsonObject(out + "/export_report.json")["int8"].toObject();
    const QJsonObject calibration = int8["calibration"].toObject();
    QCOMPARE(calibration["images"].toInt(), 3);
    QVERIFY(!calibration["reused"].toBool(true));
    // The activation ranges left to the export: both built, their detections compared with
    // fp32's on the calibration photos, the choice and its numbers reported.
    QCOMPARE(calibration["range_asked"].toString(), QString("auto"));
    const QString range = calibration["range"].toString();
    QVERIFY2(range == "percentile" || range == "minmax", qPrintable(range));
    QVERIFY2(calibration["range_why"].toString().contains(" detections on 3 calibration images, ") &&
                 calibration["range_why"].toString().contains(" with min/max"),
             qPrintable(compact(calibration)));
    qInfo("range: %s (%s)", qPrintable(range), qPrintable(calibration["range_why"].toString()));
    int quantised = 0, kept = 0;
    for (const QJsonValue& v : int8["layers"].toArray()) {
      const QJsonObject layer = v.toObject();
      const QString why = layer["why"].toString();
      if (layer["quantised"].toBool()) {
        ++quantised;
        QVERIFY2(why.startsWith("int8: "), qPrintable(why));
        // Every quantised layer's bias corrected from the calibration's input means.
        QVERIFY2(why.contains("; bias corrected by its int8 weights' mean error") &&
                     layer["bias_shift"].toObject()["max_abs"].toDouble() > 0,
                 qPrintable(compact(layer)));
      } else {
        ++kept;
        QVERIFY2(why.startsWith("float: ") && why.size() > 20, qPrintable(why));
      }
    }
    // ResNet-50 (53 convolutions), the FPN's 1x1s and three of its 3x3s, the mask head (4
    // convolutions and the transposed one), and fc6 and fc7 where int8 is the faster on this
    // CPU (timed; their reasons give both times); float: the five output layers, and the two
    // that read an int8 layer's output directly (the FPN's top 3x3, the RPN's shared 3x3):
    // with them int8 fewer of fp32's detections stay (the export's check on the calibration
    // photos, in their reasons: 0.57 against 0.65 of 400 on the benchmark's photos; without
    // the bias correction 0.00 against 0.61: OpenVINO's pair with these seeded weights, whose
    // FPN biases are all zero, loses every detection, and with the corrected biases it does not;
    // there ONNX Runtime loses as many with the pair int8: int8's own cost on this model).
    int checked = 0, timed = 0, fc_float = 0;
    for (const QJsonValue& v : int8["layers"].toArray()) {
      const QJsonObject layer = v.toObject();
      const QString why = layer["why"].toString();
      if (why.contains("reads the output of")) {
        QVERIFY2(why.contains("(checked: of fp32's ") && why.contains(" agree with these layers int8"),
                 qPrintable(why));
        ++checked;
      }
      if (layer["op"].toString() == "Gemm" && why.contains("fully connected layers int8")) {
        QVERIFY2(why.contains(" ms with them float"), qPrintable(why));
        qInfo("%s: %s", qPrintable(layer["weights"].toString()), qPrintable(why));
        ++timed;
        fc_float += layer["quantised"].toBool() ? 0 : 1;
      }
    }
    QCOMPARE(checked, 2);
    QCOMPARE(timed, 2);
    QVERIFY(fc_float == 0 || fc_float == 2);  // decided together
    QCOMPARE(quantised, 67 - fc_float);
    QCOMPARE(kept, 7 + fc_float);
    QVERIFY(calibration["bias_correction"].toBool());
    QCOMPARE(calibration["biases_corrected"].toInt(), quantised);
    const QJsonObject agreement = int8["agreement"].toObject();
    qInfo("int8 against fp32 in OpenVINO: %s", qPrintable(compact(agreement)));
    QVERIFY2(agreement["reference"].toInt() >= 100 && agreement["share"].toDouble() >= kAgreedShare,
             qPrintable(compact(agreement)));
    const QJsonArray runs = int8["runs"].toArray();
    QCOMPARE(runs.size(), 2);
    QCOMPARE(runs[0].toObject()["precision"].toString(), QString("f32"));
    QVERIFY(runs[1].toObject()["precision"].toString().startsWith("int8"));

    // The FPN's outputs in ONNX Runtime (after the ONNX checker) and in OpenVINO.
    QString log;
    QString error = runReferenceScript("tests/engine/export_parity.py",
                                       {"sqnr", out + "/model.onnx", out + "/model.int8.onnx",
                                        path("images"), "--min-db", QString::number(kMinDb)},
                                       &log, kTimeoutMs);
    qInfo("int8 against fp32, FPN outputs: %s", qPrintable(log));
    QVERIFY2(error.isEmpty(), qPrintable(error));

    // The OpenVINO inference backend runs it as int8 and keeps fp32's detections to the same
    // share as the export's own check.
    const QStringList loose = {"--box-rel",     "0.05", "--score", "0.05",
                               "--mask-iou",    "0.8",  "--share", QString::number(kAgreedShare),
                               "--count-slack", "0.1"};
    const Run lt = engine({"--spec", tvSpec_, "--task", "inference", "--checkpoint",
                           path("model.pt"), "--images", path("images"), "--out", path("tv_lt"),
                           "--set", "device=cpu", "--set", "use_amp=False"});
    QVERIFY2(lt.code == 0, qPrintable(explain(lt)));
    const Run ov = engine({"--spec", tvSpec_, "--task", "inference", "--backend", "openvino",
                           "--onnx", out + "/model.int8.onnx", "--images", path("images"), "--out",
                           path("tv_ov_int8"), "--set", "device=cpu", "--set", "use_amp=False"});
    QVERIFY2(ov.code == 0, qPrintable(explain(ov)));
    QVERIFY2(ov.out.contains(" int8+f32 on CPU"), qPrintable(ov.out));
    error = runReferenceScript(
        "tests/engine/export_parity.py",
        QStringList{"results", path("tv_ov_int8/results.json"), path("tv_lt/results.json")} + loose,
        &log, kTimeoutMs);
    qInfo("openvino backend int8: %s", qPrintable(log));
    QVERIFY2(error.isEmpty(), qPrintable(error));
  }

  // The cache written by the first export is read instead of calibrating again: the same
  // ranges, so the same QDQ model byte for byte.
  void aCacheIsReusedForTheSameModel() {
    QVERIFY2(QFile::exists(path("cal.json")), "needs the first export's cache");
    const QString out = path("tv_int8_again");
    const Run r = engine({"--spec", tvSpec_, "--task", "export", "--checkpoint", path("model.pt"),
                          "--output-dir", out, "--images", path("images/noise.png"), "--data_type",
                          "int8", "--cal_cache_file", path("cal.json"), "--set", "device=cpu"});
    QVERIFY2(r.code == 0, qPrintable(explain(r)));
    QVERIFY2(r.out.contains("int8: calibration ranges from " + path("cal.json")),
             qPrintable(r.out));
    const QJsonObject calibration =
        readJsonObject(out + "/export_report.json")["int8"].toObject()["calibration"].toObject();
    QVERIFY(calibration["reused"].toBool());
    QCOMPARE(calibration["images"].toInt(), 3);
    // The range chosen when the cache was made, not measured again on these images.
    const QJsonObject made =
        readJsonObject(path("tv_int8/export_report.json"))["int8"].toObject()["calibration"].toObject();
    QCOMPARE(calibration["range"].toString(), made["range"].toString());
    QVERIFY2(calibration["range_why"].toString().startsWith("chosen when the calibration cache was made: "),
             qPrintable(compact(calibration)));
    const QByteArray first = readBytes(path("tv_int8/model.int8.onnx"));
    QVERIFY(!first.isEmpty());
    QVERIFY2(readBytes(out + "/model.int8.onnx") == first, "another model from the same ranges");
  }

  // A shapes model that detects something (150 steps): int8 calibrated on the spec's
  // validation images by default, and the report states its AP next to fp32's.
  void shapesInt8StatesItsAccuracyCost() {
    const QString trained = mrcnn::testing::shapesRun150(dir_.path());
    QVERIFY2(trained.isEmpty(), qPrintable(trained));
    const QString run = path("shapes_run");
    const QString out = path("shapes_int8");
    const Run r =
        engine({"--spec", shapesSpec_, "--run-dir", run, "--task", "export", "--output-dir", out,
                "--data_type", "int8", "--set", "data_config.eval_samples=8"});
    QVERIFY2(r.code == 0, qPrintable(explain(r)));
    const QJsonObject int8 = readJsonObject(out + "/export_report.json")["int8"].toObject();
    QCOMPARE(int8["calibration"].toObject()["images"].toInt(), 10);
    QVERIFY(int8["calibration"].toObject()["biases_corrected"].toInt() > 20);
    // The export's own cache, named where it is (not in the folder the export was staged in).
    QCOMPARE(int8["calibration"].toObject()["cache"].toString(), out + "/calibration_cache.json");
    const QJsonObject delta = int8["ap_delta"].toObject();
    const QJsonArray runs = int8["runs"].toArray();
    qInfo("shapes int8: %s; runs %s", qPrintable(compact(delta)),
          qPrintable(QString::fromUtf8(QJsonDocument(runs).toJson(QJsonDocument::Compact))));
    QVERIFY2(delta.contains("bbox") && delta.contains("segm"), qPrintable(compact(int8)));
    // The FPN's top 3x3 and the RPN's 3x3 read a quantised layer's output: int8 or float as the
    // check on the calibration images decided, which their reasons state.
    int pairs = 0;
    for (const QJsonValue& v : int8["layers"].toArray()) {
      const QString why = v.toObject()["why"].toString();
      if (why.contains("reads the output of") || why.contains("reads a quantised layer's output")) {
        QVERIFY2(why.contains("checked"), qPrintable(why));
        qInfo("%s: %s", qPrintable(v.toObject()["weights"].toString()), qPrintable(why));
        ++pairs;
      }
    }
    QCOMPARE(pairs, 2);
    const QJsonObject agreement = int8["agreement"].toObject();
    QVERIFY2(
        agreement["reference"].toInt() >= 8 && agreement["share"].toDouble() >= kShapesAgreedShare,
        qPrintable(compact(agreement)));
    const double fp32_bbox = runs[0].toObject()["bbox"].toObject()["AP"].toDouble(-1);
    const double int8_bbox = runs[1].toObject()["bbox"].toObject()["AP"].toDouble(-1);
    QVERIFY(fp32_bbox > 0.005 && int8_bbox >= 0);
    QVERIFY(std::abs(delta["bbox"].toDouble() - (int8_bbox - fp32_bbox)) < 1e-9);
    QVERIFY2(
        std::abs(delta["bbox"].toDouble()) <= 0.02 && std::abs(delta["segm"].toDouble()) <= 0.02,
        qPrintable(compact(delta)));
  }

  // A cache written before the export corrected biases (no "input_means") is still read: the
  // model is built from its ranges with the biases as they were, and the task says so.
  void aCacheWithoutInputMeansKeepsTheBiases() {
    const QString made = path("shapes_int8/calibration_cache.json");
    QVERIFY2(QFile::exists(made), "needs the shapes export's cache");
    QJsonObject cache = readJsonObject(made);
    QVERIFY(cache.contains("input_means"));
    cache.remove("input_means");
    const QString old = path("shapes_old_cache.json");
    {
      QFile f(old);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QJsonDocument(cache).toJson());
    }
    const QString out = path("shapes_int8_old_cache");
    const Run r = engine({"--spec", shapesSpec_, "--run-dir", path("shapes_run"), "--task",
                          "export", "--output-dir", out, "--data_type", "int8", "--cal_cache_file",
                          old, "--set", "data_config.eval_samples=2"});
    QVERIFY2(r.code == 0, qPrintable(explain(r)));
    QVERIFY2(r.out.contains("\"code\":\"calibration_cache_without_means\"") &&
                 r.out.contains(old + ": made before the int8 export corrected biases"),
             qPrintable(r.out));
    const QJsonObject int8 = readJsonObject(out + "/export_report.json")["int8"].toObject();
    QCOMPARE(int8["calibration"].toObject()["biases_corrected"].toInt(), 0);
    for (const QJsonValue& v : int8["layers"].toArray()) {
      const QJsonObject layer = v.toObject();
      if (layer["quantised"].toBool()) {
        QVERIFY2(layer["why"].toString().contains("; bias kept as it is: the calibration has no "
                                                  "input means"),
                 qPrintable(compact(layer)));
      }
    }
    QVERIFY2(readJsonObject(old) == cache, "the user's cache was changed");
  }

  // The R50's cache given to the shapes model: refused, naming the file and where it came
  // from; nothing is left behind.
  void aCacheFromAnotherModelIsRefused() {
    QVERIFY2(QFile::exists(path("cal.json")), "needs the first export's cache");
    const QString out = path("shapes_wrong_cache");
    const Run r = engine({"--spec", shapesSpec_, "--run-dir", path("shapes_run"), "--task",
                          "export", "--output-dir", out, "--data_type", "int8", "--cal_cache_file",
                          path("cal.json"), "--set", "data_config.eval_samples=2"});
    QCOMPARE(r.code, 4);
    QVERIFY2(r.out.contains("\"code\":\"bad_calibration_cache\"") &&
                 r.out.contains("--cal_cache_file " + path("cal.json") +
                                ": made for another model (spec " + tvSpec_),
             qPrintable(explain(r)));
    QVERIFY(!QDir(out).exists());
    const QJsonObject cache = readJsonObject(path("cal.json"));
    QVERIFY2(cache["spec"].toString() == tvSpec_, "the refused cache was changed");
  }

  void badInt8OptionsAreRefused() {
    const Run type = engine({"--spec", tvSpec_, "--task", "export", "--data_type", "int4"});
    QCOMPARE(type.code, 2);
    QVERIFY2(type.err.contains("--data_type int4"), qPrintable(type.err));
    const Run batches =
        engine({"--spec", tvSpec_, "--task", "export", "--data_type", "int8", "--batches", "0"});
    QCOMPARE(batches.code, 2);
    QVERIFY2(batches.err.contains("--batches 0"), qPrintable(batches.err));
    const Run lone = engine({"--spec", tvSpec_, "--task", "export", "--cal_image_dir", "x"});
    QCOMPARE(lone.code, 2);
    QVERIFY2(lone.err.contains("--cal_image_dir calibrates an int8 export"), qPrintable(lone.err));
    const Run range = engine(
        {"--spec", tvSpec_, "--task", "export", "--data_type", "int8", "--cal_range", "entropy"});
    QCOMPARE(range.code, 2);
    QVERIFY2(range.err.contains("--cal_range entropy: use auto, percentile or minmax"),
             qPrintable(range.err));
    const Run bias = engine({"--spec", tvSpec_, "--task", "export", "--data_type", "int8",
                             "--bias_correction", "yes"});
    QCOMPARE(bias.code, 2);
    QVERIFY2(bias.err.contains("--bias_correction yes: use on or off"), qPrintable(bias.err));
    // A calibration folder that is not there: named, exit 4, no export.
    const Run missing =
        engine({"--spec", tvSpec_, "--task", "export", "--checkpoint", path("model.pt"),
                "--output-dir", path("no_cal"), "--data_type", "int8", "--cal_image_dir",
                path("nowhere"), "--images", path("images/noise.png"), "--set", "device=cpu"});
    QCOMPARE(missing.code, 4);
    QVERIFY2(missing.out.contains("--cal_image_dir " + path("nowhere") + ": not a folder"),
             qPrintable(explain(missing)));
    QVERIFY(!QDir(path("no_cal")).exists());
  }
};

QTEST_GUILESS_MAIN(ExportInt8Test)
#include "test_export_int8.moc"

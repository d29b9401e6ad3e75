// The catalogue of bad input: what users and machines throw at the workbench, each case run
// through the real executables. Every case ends in one clear message naming the file and the
// place, the documented exit code (0 where the task goes on without the bad part, 2 a bad
// command line, 3 a bad spec, 4 a dataset, checkpoint, path or disk that cannot be used), no
// signal, no hang, and nothing already written lost.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>
#include <vector>

#include "specs/events.h"
#include "tests/common/process_run.h"

namespace {

using mrcnn::testing::binDir;
using mrcnn::testing::Run;
using mrcnn::testing::runProcess;
using mrcnn::testing::sourceDir;
using mrcnn::testing::writeFile;

constexpr int kTimeoutMs = 180000;

Run engine(const QStringList& args,
           const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  return runProcess(binDir() + "/mrcnn-engine", args, env, kTimeoutMs);
}

// The engine under bash with `setup` run first (ulimit, a mount of its own), then `after`
// (copying out what the mount holds). The engine's exit code is the script's.
Run engineIn(const QString& setup, const QStringList& args, const QString& after = {}) {
  QString line = setup + "\n\"$0\"";
  for (int i = 0; i < args.size(); ++i)
    line += QString(" \"${%1}\"").arg(i + 1);
  line += "\ncode=$?\n" + after + "\nexit $code\n";
  return runProcess("/bin/bash", QStringList{"-c", line, binDir() + "/mrcnn-engine"} + args,
                    QProcessEnvironment::systemEnvironment(), kTimeoutMs);
}

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// The events of a stream of lines; false when a line is not a whole event (a torn line).
bool parseEvents(const QByteArray& text, std::vector<mrcnn::events::Event>* events, QString* bad) {
  for (const QByteArray& line : text.split('\n')) {
    if (line.isEmpty()) continue;
    const auto e = mrcnn::events::parseJsonLine(line.toStdString());
    if (!e) {
      *bad = QString::fromUtf8(line);
      return false;
    }
    events->push_back(*e);
  }
  return true;
}

// The error event of a run's stdout, or a default one.
mrcnn::events::Event errorEventOf(const QString& out) {
  std::vector<mrcnn::events::Event> events;
  QString bad;
  parseEvents(out.toUtf8(), &events, &bad);
  for (const auto& e : events)
    if (e.type() == "error") return e;
  return {};
}

// A stored (uncompressed) zip of one file: a zip that is not a checkpoint.
QByteArray zipOf(const QByteArray& name, const QByteArray& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char c : data) {
    crc ^= static_cast<uint8_t>(c);
    for (int k = 0; k < 8; ++k)
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  crc = ~crc;
  QByteArray out;
  const auto u16 = [&](uint32_t v) {
    out.append(static_cast<char>(v & 0xFF)).append(static_cast<char>((v >> 8) & 0xFF));
  };
  const auto u32 = [&](uint32_t v) {
    u16(v & 0xFFFF);
    u16(v >> 16);
  };
  const auto size = static_cast<uint32_t>(data.size());
  const auto name_size = static_cast<uint32_t>(name.size());
  u32(0x04034b50);  // local file header
  for (uint32_t v : {20u, 0u, 0u, 0u, 0u})
    u16(v);
  u32(crc);
  u32(size);
  u32(size);
  u16(name_size);
  u16(0);
  out.append(name).append(data);
  const auto central = static_cast<uint32_t>(out.size());
  u32(0x02014b50);  // central directory
  for (uint32_t v : {20u, 20u, 0u, 0u, 0u, 0u})
    u16(v);
  u32(crc);
  u32(size);
  u32(size);
  u16(name_size);
  for (uint32_t v : {0u, 0u, 0u, 0u})
    u16(v);
  u32(0);
  u32(0);
  out.append(name);
  const auto central_size = static_cast<uint32_t>(out.size()) - central;
  u32(0x06054b50);  // end of central directory
  for (uint32_t v : {0u, 0u, 1u, 1u})
    u16(v);
  u32(central_size);
  u32(central);
  u16(0);
  return out;
}

// A PNG whose header claims width x height pixels, with a few bytes of data after it: what a
// decompression bomb looks like to a reader before it decodes.
QByteArray claimedPng(uint32_t width, uint32_t height) {
  QByteArray png("\x89PNG\r\n\x1a\n", 8);
  const auto be32 = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8)
      png.append(static_cast<char>((v >> s) & 0xFF));
  };
  const auto chunk = [&](const char* type, const QByteArray& body) {
    be32(static_cast<uint32_t>(body.size()));
    png.append(type, 4).append(body);
    be32(0);  // the CRC: readers check the size first
  };
  QByteArray ihdr;
  for (uint32_t v : {width, height}) {
    for (int s = 24; s >= 0; s -= 8)
      ihdr.append(static_cast<char>((v >> s) & 0xFF));
  }
  ihdr.append("\x08\x02\x00\x00\x00", 5);  // 8-bit RGB
  chunk("IHDR", ihdr);
  chunk("IDAT", QByteArray(64, '\0'));
  chunk("IEND", {});
  return png;
}

// What a run that filled its disk while writing its second checkpoint must leave: an error
// event naming the folder (and, `with_free`, the space needed and free), exit 4, no partial
// file, the first checkpoint and its pointer intact, events that end with a failed done.
void checkFullDiskRun(const Run& r, const QString& run, bool with_free, const QString& listing,
                      const QByteArray& last, const QByteArray& events_jsonl) {
  QVERIFY2(r.code == 4, qPrintable(QString("exit %1: %2").arg(r.code).arg(r.err.right(2000))));
  const auto error = errorEventOf(r.out);
  QCOMPARE(QString::fromStdString(error.code()), QString("disk_full"));
  const QString message = QString::fromStdString(error.message());
  QVERIFY2(message.contains(run + "/checkpoints: the disk is full: model.step-2.pt ") &&
               (!with_free || (message.contains("model.step-2.pt needs ") && message.contains(" MB free"))),
           qPrintable(message));
  QVERIFY2(listing.contains("model.step-1.pt") && !listing.contains("step-2") &&
               !listing.contains(".partial") && !listing.contains(".tmp"),
           qPrintable(listing));
  QCOMPARE(last, QByteArray("model.step-1.pt\n"));
  std::vector<mrcnn::events::Event> events;
  QString bad;
  QVERIFY2(parseEvents(events_jsonl, &events, &bad), qPrintable(bad));
  QCOMPARE(QString::fromStdString(events.back().status()), QString("failed"));
}

}  // namespace

class BadInputsTest : public QObject {
  Q_OBJECT

  // One real training step on the shapes dataset: the checkpoint the inference cases run,
  // and a shapes dataset up to date for the cases that must not write it again.
  QTemporaryDir fixture_;
  QString shapes_, checkpoint_;

  QStringList shapesArgs(const QString& output_dir, const QStringList& more = {}) const {
    QStringList args{"--spec", sourceDir() + "/specs/shapes_resnet18.txt"};
    const QStringList sets{"data_config.shapes_dataset.root=" + shapes_,
                           "data_config.shapes_dataset.train_images=4",
                           "data_config.shapes_dataset.val_images=2",
                           "output_dir=" + output_dir,
                           "device=cpu",
                           "train_batch_size=2",
                           "num_steps_per_eval=0",
                           "target_bbox_map=0",
                           "target_segm_map=0",
                           "logging_frequency=1"};
    for (const QString& s : sets)
      args << "--set" << s;
    return args + more;
  }

 private slots:
  void initTestCase() {
    shapes_ = fixture_.filePath("shapes");
    const Run r = engine(shapesArgs(fixture_.filePath("runs"), {"--set", "total_steps=1", "--set",
                                                                "save_checkpoints_steps=1"}));
    QVERIFY2(r.code == 0, qPrintable(r.err.right(3000)));
    checkpoint_ = fixture_.filePath("runs/shapes_resnet18/checkpoints/model.step-1.pt");
    QVERIFY(QFile::exists(checkpoint_));
  }

  // --help and --version on a terminal without a display, and every command line error
  // before a window is attempted.
  void helpAndVersionWithoutADisplay() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char* v : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"})
      env.remove(v);
    const QString workbench = binDir() + "/mrcnn-workbench";
    Run r = runProcess(workbench, {"--help"}, env, 30000);
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains("--view <N>") && r.out.contains("--headless"), qPrintable(r.out));
    r = runProcess(workbench, {"--version"}, env, 30000);
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.startsWith("mrcnn-workbench ") && r.out.contains("Qt "), qPrintable(r.out));
    r = runProcess(workbench, {"--view", "9"}, env, 30000);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--view takes 1 to 6"), qPrintable(r.err));
    r = runProcess(workbench, {"--no-such-option"}, env, 30000);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("no-such-option"), qPrintable(r.err));
    r = runProcess(workbench, {"--results", "r.json"}, env, 30000);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--results needs --results-images"), qPrintable(r.err));
  }

  // A file the window is asked to open that cannot be used: the error names the option and
  // the file; with --screenshot (automation) the run ends with 4 and no picture of a window
  // that does not show what was asked for.
  void windowFilesThatCannotBeOpened() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    QTemporaryDir dir;
    const QString workbench = binDir() + "/mrcnn-workbench";
    const QString shot = dir.filePath("shot.png");
    Run r = runProcess(
        workbench, {"--prune-result", dir.filePath("no-prune"), "--screenshot", shot}, env, 60000);
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains("--prune-result: " + dir.filePath("no-prune/status.json")),
             qPrintable(r.err));
    QVERIFY(!QFile::exists(shot));
    const QString metrics = writeFile(dir, "metrics.json", "{\"bbox\": ");
    r = runProcess(workbench, {"--analysis", metrics, "--screenshot", shot}, env, 60000);
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains("--analysis: ") && r.err.contains(metrics), qPrintable(r.err));
    QVERIFY(!QFile::exists(shot));
  }

  // A decompression bomb, an empty file, a truncated JPEG and a text file named .jpg beside a
  // good image: four warnings naming their files, the good image's detections.
  void inferenceSkipsEveryKindOfBadImage() {
    QTemporaryDir dir;
    const QString images = dir.filePath("images");
    QVERIFY(QDir().mkpath(images));
    const QStringList val = QDir(shapes_ + "/images/val").entryList({"*.jpg"}, QDir::Files);
    QVERIFY(!val.isEmpty());
    const QByteArray good = readAll(shapes_ + "/images/val/" + val.front());
    writeFile(dir, "images/a_good.jpg", good);
    writeFile(dir, "images/bomb.png", claimedPng(60000, 60000));
    writeFile(dir, "images/empty.jpg", {});
    writeFile(dir, "images/truncated.jpg", good.left(good.size() / 2));
    writeFile(dir, "images/text.jpg", "this is not an image\n");
    const QString out = dir.filePath("out");
    const Run r =
        engine(shapesArgs(dir.filePath("runs"), {"--task", "inference", "--checkpoint", checkpoint_,
                                                 "--images", images, "--out", out}));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    std::vector<mrcnn::events::Event> events;
    QString bad;
    QVERIFY2(parseEvents(r.out.toUtf8(), &events, &bad), qPrintable(bad));
    QMap<QString, QString> warned;  // file -> message
    for (const auto& e : events) {
      if (e.type() != "warning" || e.code() != "unreadable_image") continue;
      const QString message = QString::fromStdString(e.message());
      warned[QFileInfo(message.section(": ", 0, 0)).fileName()] = message;
    }
    QCOMPARE(warned.keys(), (QStringList{"bomb.png", "empty.jpg", "text.jpg", "truncated.jpg"}));
    QVERIFY2(warned["bomb.png"].contains("claims 60000x60000 pixels"),
             qPrintable(warned["bomb.png"]));
    QVERIFY2(warned["empty.jpg"].contains("empty file"), qPrintable(warned["empty.jpg"]));
    QVERIFY2(warned["truncated.jpg"].contains("truncated JPEG"),
             qPrintable(warned["truncated.jpg"]));
    QVERIFY2(warned["text.jpg"].contains("not an image"), qPrintable(warned["text.jpg"]));
    QCOMPARE(QString::fromStdString(events.back().status()), QString("ok"));
    QVERIFY2(QString::fromStdString(events.back().summary()).startsWith("1 image (4 unreadable"),
             events.back().summary().c_str());
    QVERIFY(QFile::exists(out + "/a_good.png"));
    QVERIFY(readAll(out + "/results.json").contains("\"file_name\":\"a_good.jpg\""));
  }

  // Inference on --images reads neither the spec's training nor its validation set: paths to
  // a COCO copy on another machine are not its concern (the category names then fall back).
  void inferenceIgnoresDatasetPathsItDoesNotRead() {
    QTemporaryDir dir;
    const QString images = dir.filePath("images");
    QVERIFY(QDir().mkpath(images));
    const QStringList val = QDir(shapes_ + "/images/val").entryList({"*.jpg"}, QDir::Files);
    QVERIFY(QFile::copy(shapes_ + "/images/val/" + val.front(), images + "/one.jpg"));
    // The shapes spec's model without its dataset: a COCO layout on another machine.
    QByteArray text = readAll(sourceDir() + "/specs/shapes_resnet18.txt");
    QVERIFY(text.contains("\ndata_config {\n"));
    text = QString::fromUtf8(text)
               .remove(QRegularExpression("  shapes_dataset \\{[^}]*\\}\n"))
               .toUtf8();
    QVERIFY(!text.contains("shapes_dataset {"));
    text.replace("\ndata_config {\n",
                 "\ndata_config {\n  train_image_dir: \"/nowhere/train2017\"\n"
                 "  train_json_file: \"/nowhere/instances_train2017.json\"\n"
                 "  val_image_dir: \"/nowhere/val2017\"\n"
                 "  val_json_file: \"/nowhere/instances_val2017.json\"\n");
    const QString spec = writeFile(dir, "elsewhere.txt", text);
    QStringList args{"--spec",       spec,
                     "--set",        "device=cpu",
                     "--task",       "inference",
                     "--checkpoint", checkpoint_,
                     "--images",     images,
                     "--out",        dir.filePath("out"),
                     "--run-dir",    dir.filePath("run")};
    Run r = engine(args);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("/nowhere/instances_val2017.json: no such file; detections carry "
                            "their labels"),
             qPrintable(r.out));
    // Without --images the validation images are the input: then their folder is checked.
    args = args.mid(0, args.indexOf("--images"));
    r = engine(args);
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains("data_config.val_image_dir: no such folder /nowhere/val2017"),
             qPrintable(r.err));
    QVERIFY(!r.err.contains("train"));
  }

  // Numbers a spec cannot hold, in the file and on the command line: exit 3 naming the place.
  void specsWithBadNumbers() {
    QTemporaryDir dir;
    const QByteArray base = readAll(sourceDir() + "/specs/shapes_resnet18.txt");
    struct Case {
      const char* name;
      QByteArray text;
      QString needle;  // after the spec's path
    };
    const std::vector<Case> cases = {
        {"negative.txt", base + "\ntrain_batch_size: -2\n", "train_batch_size"},
        {"overflow.txt", base + "\ntotal_steps: 99999999999999999999999\n", "total_steps"},
        {"nested.txt", base + "\n" + QByteArray(5000, '{'), "nested.txt:"},
    };
    for (const Case& c : cases) {
      const QString spec = writeFile(dir, c.name, c.text);
      const Run r = engine({"--spec", spec, "--task", "validate"});
      QVERIFY2(r.code == 3, qPrintable(QString(c.name) + ": " + r.err));
      QVERIFY2(r.err.contains(spec + ":") && r.err.contains(c.needle),
               qPrintable(QString(c.name) + ": " + r.err));
    }
    const Run r = engine({"--spec", sourceDir() + "/specs/shapes_resnet18.txt", "--task",
                          "validate", "--set", "train_batch_size=-1"});
    QVERIFY2(r.code == 3 && r.err.contains("train_batch_size"), qPrintable(r.err));
  }

  // Annotation and results files that are empty, cut, of the wrong shape, nested without end
  // or hold numbers out of range: exit 4, the file, the byte and the key path; no metrics.
  void badJsonFiles() {
    QTemporaryDir dir;
    const QString shared = qEnvironmentVariable("MRCNN_SHARED_DIR") + "/data/coco_eval_bbox/";
    const QByteArray gt_text = readAll(shared + "gt.json");
    QVERIFY(!gt_text.isEmpty());
    struct Case {
      const char* name;
      QByteArray text;
      bool is_results;  // else the annotations
      QString needle;
    };
    const std::vector<Case> cases = {
        {"empty.json", "", false, "empty.json"},
        {"cut.json", gt_text.left(gt_text.size() / 2), false, "cut.json"},
        {"array.json", "[1, 2, 3]", false, "array.json"},
        {"nested.json", QByteArray(100000, '[') + QByteArray(100000, ']'), false, "nested.json"},
        {"huge_id.json",
         "{\"images\": [{\"id\": 1e400, \"width\": 10, \"height\": 10, \"file_name\": \"a.jpg\"}],"
         " \"annotations\": [], \"categories\": []}",
         false, "huge_id.json"},
        {"negative_size.json",
         "{\"images\": [{\"id\": 1, \"width\": -10, \"height\": 10, \"file_name\": \"a.jpg\"}],"
         " \"annotations\": [], \"categories\": []}",
         false, "width"},
        {"r_empty.json", "", true, "r_empty.json"},
        {"r_object.json", "{\"image_id\": 1}", true, "r_object.json"},
        {"r_nested.json", QByteArray(100000, '['), true, "r_nested.json"},
        {"r_unknown.json",
         "[{\"image_id\": 123456789, \"category_id\": 1, \"bbox\": [1, 2, 3, 4], \"score\": 0.5}]",
         true, "[0].image_id: image 123456789 is not in the ground truth"},
        {"r_overflow.json",
         "[{\"image_id\": 99999999999999999999999, \"category_id\": 1, \"bbox\": [1, 2, 3, 4], "
         "\"score\": 0.5}]",
         true, "[0].image_id"},
    };
    for (const Case& c : cases) {
      const QString path = writeFile(dir, c.name, c.text);
      const QString metrics = dir.filePath(QString(c.name) + ".metrics");
      const QString gt = c.is_results ? shared + "gt.json" : path;
      const QString dt = c.is_results ? path : shared + "dt.json";
      const Run r = engine(
          {"--task", "evaluate", "--annotations", gt, "--results", dt, "--metrics-out", metrics});
      QVERIFY2(r.code == 4,
               qPrintable(QString("%1: exit %2: %3").arg(c.name).arg(r.code).arg(r.err)));
      QVERIFY2(r.err.contains(c.needle), qPrintable(QString(c.name) + ": " + r.err));
      QVERIFY2(r.err.count("error") == 1, qPrintable(QString(c.name) + ": " + r.err));
      QVERIFY(!QFile::exists(metrics));
    }
  }

  // A run directory whose parent is a file, checkpoints that are random bytes or a zip of
  // something else: exit 4 naming the path.
  void unusablePathsAndCheckpoints() {
    QTemporaryDir dir;
    const QString file = writeFile(dir, "a_file", "x");
    Run r = engine(
        shapesArgs(dir.filePath("runs"), {"--run-dir", file + "/run", "--set", "total_steps=1"}));
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains(file), qPrintable(r.err));

    QByteArray noise(4096, '\0');
    for (int i = 0; i < noise.size(); ++i)
      noise[i] = static_cast<char>((i * 2654435761u) >> 13);
    const QString random = writeFile(dir, "random.pt", noise);
    const QString zip = writeFile(dir, "other.pt", zipOf("readme.txt", "not a checkpoint\n"));
    for (const QString& checkpoint : {random, zip}) {
      r = engine(shapesArgs(dir.filePath("runs"),
                            {"--task", "inference", "--checkpoint", checkpoint, "--images",
                             shapes_ + "/images/val", "--out", dir.filePath("out")}));
      QVERIFY2(r.code == 4, qPrintable(checkpoint + ": " + r.err));
      QVERIFY2(r.err.contains(checkpoint), qPrintable(r.err));
      QCOMPARE(QString::fromStdString(errorEventOf(r.out).code()), QString("bad_checkpoint"));
    }
  }

  // The disk fills while a checkpoint is written, on a real small disk: a 250 MB tmpfs in a
  // mount namespace of this process tree (room for one 175 MB checkpoint of this model, not
  // two). Skipped where no mount namespace is allowed; fullDiskWithoutAMount runs everywhere.
  void fullDiskWhileCheckpointing() {
    QTemporaryDir dir;
    const QString disk = dir.filePath("disk");
    QVERIFY(QDir().mkpath(disk));
    const Run probe = runProcess("unshare", {"--user", "--map-root-user", "--mount", "/bin/sh",
                                             "-c", "mount -t tmpfs -o size=1m tmpfs \"$0\"", disk});
    if (probe.code != 0)
      QSKIP("no tmpfs in a mount namespace here (unshare --user --mount): no small disk to fill");
    const QString run = disk + "/run";
    const Run r = runProcess(
        "unshare",
        QStringList{"--user", "--map-root-user", "--mount", "/bin/bash", "-c",
                    "disk=\"$1\"\nshift\n"
                    "mount -t tmpfs -o size=250m tmpfs \"$disk\" || exit 99\n"
                    "\"$@\"\ncode=$?\n"
                    "ls -a \"$disk\"/run/checkpoints > \"$disk\"/../listing.txt\n"
                    "cp \"$disk\"/run/checkpoints/last \"$disk\"/run/events.jsonl \"$disk\"/../\n"
                    "exit $code",
                    "bash", disk, binDir() + "/mrcnn-engine"} +
            shapesArgs(dir.filePath("runs"), {"--run-dir", run, "--set", "total_steps=3", "--set",
                                              "save_checkpoints_steps=1"}),
        QProcessEnvironment::systemEnvironment(), kTimeoutMs);
    QVERIFY2(r.code != 99, "cannot mount a tmpfs in the namespace, though the probe could");
    checkFullDiskRun(r, run, /*with_free=*/true, QString::fromUtf8(readAll(dir.filePath("listing.txt"))),
                     readAll(dir.filePath("last")), readAll(dir.filePath("events.jsonl")));
  }

  // The same promise where nothing can be mounted (CI containers): the small-disk shim
  // (tests/common/small_disk_shim.cpp, preloaded) makes a folder a 250 MB disk for the
  // engine's writes and free-space queries. Then with the free space hidden (the check before
  // writing passes), so that the write itself meets ENOSPC midway through the checkpoint.
  void fullDiskWithoutAMount() {
    for (const bool hidden : {false, true}) {
      QTemporaryDir dir;
      const QString disk = dir.filePath("disk");
      QVERIFY(QDir().mkpath(disk));
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.insert("LD_PRELOAD", MRCNN_SMALL_DISK_SHIM);
      env.insert("MRCNN_SMALL_DISK_DIR", disk);
      env.insert("MRCNN_SMALL_DISK_BYTES", "250000000");
      if (hidden) env.insert("MRCNN_SMALL_DISK_HIDE", "1");
      const QString run = disk + "/run";
      const Run r = engine(shapesArgs(dir.filePath("runs"), {"--run-dir", run, "--set", "total_steps=3",
                                                             "--set", "save_checkpoints_steps=1"}),
                           env);
      const QString listing = QDir(run + "/checkpoints").entryList(QDir::Files | QDir::Hidden).join(' ');
      checkFullDiskRun(r, run, /*with_free=*/!hidden, listing, readAll(run + "/checkpoints/last"),
                       readAll(run + "/events.jsonl"));
      if (QTest::currentTestFailed()) {
        qWarning("with the free space %s", hidden ? "hidden" : "shown");
        return;
      }
    }
  }

  // The file size limit (ulimit -f) is reached in the middle of a checkpoint's write (the
  // free space looked sufficient): the same clean end; and in the middle of events.jsonl.
  void fileSizeLimitMidWrite() {
    QTemporaryDir dir;
    const QString run = dir.filePath("run");
    // 100 MB a file: the 175 MB checkpoint is cut in the middle.
    Run r = engineIn("ulimit -f 100000",
                     shapesArgs(dir.filePath("runs"), {"--run-dir", run, "--set", "total_steps=1",
                                                       "--set", "save_checkpoints_steps=1"}));
    QVERIFY2(r.code == 4, qPrintable(QString("exit %1: %2").arg(r.code).arg(r.err.right(2000))));
    QString message = QString::fromStdString(errorEventOf(r.out).message());
    QVERIFY2(message.contains(run + "/checkpoints: the file size limit (ulimit -f) is reached: "
                                    "model.step-1.pt needs "),
             qPrintable(message));
    QCOMPARE(QDir(run + "/checkpoints").entryList(QDir::Files | QDir::Hidden), QStringList());
    std::vector<mrcnn::events::Event> events;
    QString bad;
    QVERIFY2(parseEvents(readAll(run + "/events.jsonl"), &events, &bad), qPrintable(bad));
    QCOMPARE(QString::fromStdString(events.back().type()), QString("done"));

    // 12 KiB a file: events.jsonl fills after a few steps; stdout still gets the error.
    const QString run2 = dir.filePath("run2");
    r = engineIn("ulimit -f 12",
                 shapesArgs(dir.filePath("runs"), {"--run-dir", run2, "--set", "total_steps=200",
                                                   "--set", "save_checkpoints_steps=0"}));
    QVERIFY2(r.code == 4, qPrintable(QString("exit %1: %2").arg(r.code).arg(r.err.right(2000))));
    message = QString::fromStdString(errorEventOf(r.out).message());
    QVERIFY2(message.contains(run2 + ": the file size limit (ulimit -f) is reached: "),
             qPrintable(message));
    QVERIFY2(r.err.contains("error: "), qPrintable(r.err));
    events.clear();
    QVERIFY2(parseEvents(readAll(run2 + "/events.jsonl"), &events, &bad), qPrintable(bad));
    QVERIFY(events.size() > 3);

    // dataset_convert's shards: 64 KiB a file.
    const QString tiny = qEnvironmentVariable("MRCNN_SHARED_DIR") + "/data/tinycoco/";
    r = engineIn(
        "ulimit -f 64",
        {"--task", "dataset_convert", "--image-dir", tiny + "images/val2017", "--annotations",
         tiny + "annotations/instances_val2017.json", "--output-dir", dir.filePath("shards")});
    QVERIFY2(r.code == 4, qPrintable(QString("exit %1: %2").arg(r.code).arg(r.err.right(2000))));
    QVERIFY2(r.err.contains(dir.filePath("shards") + ": the file size limit"), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(BadInputsTest)
#include "test_bad_inputs.moc"

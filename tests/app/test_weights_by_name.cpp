// A spec's checkpoint given by name ("torchvision:resnet18") through the real engine: the
// train task downloads it once from a real HTTP server on 127.0.0.1 (tests/weights/
// weights_server.py, reached through a test catalogue, MRCNN_WEIGHTS_CATALOGUE), logs the
// download and the ImageNet start, keeps it in the user's cache (XDG_CACHE_HOME) and takes it
// from there the next time; a server that cannot be reached ends the task with exit 4 and one
// message naming the URL and where the file can be put by hand. The ImageNet file itself is
// torchvision's resnet18 with seeded weights, written by the oracle.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/common/process_run.h"

namespace {

using mrcnn::testing::binDir;
using mrcnn::testing::Run;
using mrcnn::testing::runProcess;
using mrcnn::testing::sourceDir;
using mrcnn::testing::writeFile;

constexpr const char* kOracle =
    "import hashlib, os, sys, torch, torchvision\n"
    "torch.manual_seed(7)\n"
    "path = os.path.join(sys.argv[1], 'resnet18.tmp')\n"
    "torch.save(torchvision.models.resnet18(weights=None).state_dict(), path)\n"
    "prefix = hashlib.sha256(open(path, 'rb').read()).hexdigest()[:8]\n"
    "os.rename(path, os.path.join(sys.argv[1], 'resnet18-' + prefix + '.pth'))\n"
    "print(prefix)\n";

QString catalogue(const QString& url, const QString& prefix) {
  return QString(
             "{\"entries\": [{\"name\": \"torchvision:resnet18\", \"url\": \"%1\", "
             "\"sha256_prefix\": \"%2\", \"kind\": \"imagenet_resnet\", \"depth\": 18}]}")
      .arg(url, prefix);
}

}  // namespace

class TestWeightsByName : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QProcess server_;
  QString port_, prefix_, skip_;

  QString requestLog() const { return dir_.filePath("requests.log"); }
  int requests() const {
    QFile f(requestLog());
    return f.open(QIODevice::ReadOnly) ? static_cast<int>(f.readAll().count('\n')) : 0;
  }

  // One training step of the embedded spec from torchvision:resnet18, on a small shapes set
  // of its own, in run directory `run`.
  Run train(const QString& run, const QString& catalogue_file) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("XDG_CACHE_HOME", dir_.filePath("cache"));
    env.insert("MRCNN_WEIGHTS_CATALOGUE", catalogue_file);
    env.insert("MRCNN_WEIGHTS_STALL_SECONDS", "5");
    env.insert("no_proxy", "127.0.0.1,localhost");
    env.insert("NO_PROXY", "127.0.0.1,localhost");
    const QStringList sets = {"checkpoint=torchvision:resnet18",
                              "total_steps=1",
                              "train_batch_size=2",
                              "num_steps_per_eval=0",
                              "data_config.shapes_dataset.root=" + dir_.filePath("shapes"),
                              "data_config.shapes_dataset.train_images=4",
                              "data_config.shapes_dataset.val_images=2"};
    QStringList args = {"--spec", sourceDir() + "/specs/shapes_resnet18.txt", "--run-dir", run};
    for (const QString& s : sets)
      args << "--set" << s;
    return runProcess(binDir() + "/mrcnn-engine", args, env, 300000);
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    const QString python = qEnvironmentVariable("MRCNN_PYTHON");
    if (python.isEmpty()) QSKIP("MRCNN_PYTHON is not set: no oracle and no HTTP server");
    QVERIFY(QDir().mkpath(dir_.filePath("served")));
    const QString oracle = writeFile(dir_, "oracle.py", kOracle);
    const Run made = runProcess(python, {oracle, dir_.filePath("served")});
    QVERIFY2(made.code == 0, qPrintable(made.err));
    prefix_ = made.out.trimmed();
    QCOMPARE(prefix_.size(), 8);

    server_.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    server_.start(python, {sourceDir() + "/tests/weights/weights_server.py",
                           dir_.filePath("served"), requestLog()});
    QVERIFY2(server_.waitForReadyRead(30000), qPrintable(server_.errorString()));
    const QString line = QString::fromUtf8(server_.readLine()).trimmed();
    QVERIFY2(line.startsWith("port "), qPrintable(line));
    port_ = line.mid(5);
  }

  void cleanupTestCase() {
    server_.kill();
    server_.waitForFinished();
  }

  void downloadedOnceThenTakenFromTheCache() {
    const QString url =
        "http://127.0.0.1:" + port_ + "/models/resnet18-" + prefix_ + ".pth";
    const QString file = writeFile(dir_, "catalogue.json", catalogue(url, prefix_).toUtf8());
    const Run first = train(dir_.filePath("run1"), file);
    QVERIFY2(first.code == 0, qPrintable(first.err + first.out.right(3000)));
    QVERIFY2(first.out.contains("downloading torchvision:resnet18"), qPrintable(first.out));
    QVERIFY2(first.out.contains("ImageNet ResNet-18"), qPrintable(first.out));
    QCOMPARE(requests(), 1);
    const QString cached =
        dir_.filePath("cache/mrcnn-workbench/weights/resnet18-" + prefix_ + ".pth");
    QVERIFY2(QFile::exists(cached), qPrintable(cached));
    // The download as events (the headless bar and the GUI's status line draw them): the
    // last one says done with every byte of the file.
    const QString bytes = QString::number(QFileInfo(cached).size());
    bool done_event = false;
    for (const QString& line : first.out.split('\n')) {
      if (!line.contains("\"type\":\"download\"")) continue;
      QVERIFY2(line.contains("\"name\":\"torchvision:resnet18\""), qPrintable(line));
      done_event = line.contains("\"done\":true") &&
                   line.contains("\"bytes\":\"" + bytes + "\"") &&
                   line.contains("\"totalBytes\":\"" + bytes + "\"");
    }
    QVERIFY2(done_event, qPrintable(first.out.left(3000)));

    // Another run from the same name: the cache has it, no request is made.
    const Run second = train(dir_.filePath("run2"), file);
    QVERIFY2(second.code == 0, qPrintable(second.err + second.out.right(3000)));
    QVERIFY(!second.out.contains("downloading torchvision:resnet18"));
    QVERIFY2(second.out.contains("ImageNet ResNet-18"), qPrintable(second.out));
    QCOMPARE(requests(), 1);
  }

  void unreachableServerIsExit4NamingTheUrlAndThePlace() {
    QDir(dir_.filePath("cache")).removeRecursively();
    // A port nobody listens on: the server's, stopped.
    const QString url =
        "http://127.0.0.1:" + port_ + "/models/resnet18-" + prefix_ + ".pth";
    cleanupTestCase();
    const QString file = writeFile(dir_, "offline.json", catalogue(url, prefix_).toUtf8());
    const Run r = train(dir_.filePath("run3"), file);
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains(url), qPrintable(r.err));
    QVERIFY2(r.err.contains(dir_.filePath("cache/mrcnn-workbench/weights")), qPrintable(r.err));
    QVERIFY2(r.out.contains("weights_unavailable"), qPrintable(r.out.right(2000)));
    // Nothing was left in the cache, and no step was trained.
    QVERIFY(!QFile::exists(dir_.filePath("cache/mrcnn-workbench/weights/resnet18-" + prefix_ +
                                          ".pth")));
    QVERIFY(!QDir(dir_.filePath("run3/checkpoints")).exists() ||
            QDir(dir_.filePath("run3/checkpoints")).isEmpty());
  }
};

QTEST_GUILESS_MAIN(TestWeightsByName)
#include "test_weights_by_name.moc"

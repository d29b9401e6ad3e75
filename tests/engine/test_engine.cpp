// The engine's device choice, its view of LibTorch, atomic run-directory writes and scratch files.
#include <sys/stat.h>
#include <unistd.h>

#include <QTemporaryDir>
#include <QtTest>
#include <fstream>
#include <sstream>

#include "engine/cli.h"
#include "engine/exit_codes.h"
#include "engine/runtime/device.h"
#include "io/atomic_file.h"
#include "io/scratch_file.h"

using namespace mrcnn::engine;

namespace {

std::string readAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace

class EngineTest : public QObject {
  Q_OBJECT
 private slots:
  void cpuIsAlwaysAvailable() {
    RuntimeInfo none;
    const DeviceChoice c = chooseDevice("cpu", none);
    QVERIFY(c.ok);
    QCOMPARE(QString::fromStdString(c.name), QString("cpu"));
  }

  void autoPicksTheFirstGpuWhenThereIsOne() {
    RuntimeInfo none;
    QCOMPARE(QString::fromStdString(chooseDevice("auto", none).name), QString("cpu"));
    RuntimeInfo two;
    two.cuda_built = true;
    two.cuda_devices = 2;
    QCOMPARE(QString::fromStdString(chooseDevice("auto", two).name), QString("cuda:0"));
    QCOMPARE(QString::fromStdString(chooseDevice("cuda", two).name), QString("cuda:0"));
    QCOMPARE(QString::fromStdString(chooseDevice("cuda:1", two).name), QString("cuda:1"));
  }

  void cudaWithoutAGpuIsAClearError() {
    RuntimeInfo built;
    built.cuda_built = true;
    DeviceChoice c = chooseDevice("cuda", built);
    QVERIFY(!c.ok);
    QVERIFY(QString::fromStdString(c.error).contains("no GPU is visible"));
    RuntimeInfo cpu_only;
    c = chooseDevice("cuda:0", cpu_only);
    QVERIFY(!c.ok);
    QVERIFY(QString::fromStdString(c.error).contains("built without CUDA"));
    RuntimeInfo two;
    two.cuda_built = true;
    two.cuda_devices = 2;
    c = chooseDevice("cuda:2", two);
    QVERIFY(!c.ok);
    QVERIFY(QString::fromStdString(c.error).contains("has 2 GPU(s)"));
    QVERIFY(!chooseDevice("tpu", two).ok);
  }

  void runtimeReportsThisLibTorch() {
    const RuntimeInfo info = runtimeInfo();
    QVERIFY(!info.torch_version.empty());
    QVERIFY(info.cpu_threads >= 1);
    if (info.cuda_devices == 0) {
      QSKIP("no GPU on this machine: the CUDA device checks run where one exists");
    }
    const DeviceChoice c = chooseDevice("cuda:0", info);
    QVERIFY(c.ok);
  }

  void atomicWriteReplacesWholeFiles() {
    QTemporaryDir dir;
    const std::filesystem::path path =
        std::filesystem::path(dir.path().toStdString()) / "a/b/spec.txt";
    mrcnn::io::writeFileAtomic(path, "first");
    QCOMPARE(QString::fromStdString(readAll(path)), QString("first"));
    mrcnn::io::writeFileAtomic(path, std::string(1 << 20, 'x'));
    QCOMPARE(readAll(path).size(), std::size_t{1 << 20});
    // No temporary file is left beside it.
    int entries = 0;
    for (const auto& e : std::filesystem::directory_iterator(path.parent_path())) {
      (void)e;
      ++entries;
    }
    QCOMPARE(entries, 1);
  }

  void atomicWriteFailureKeepsTheOldFile() {
    if (::geteuid() == 0) {
      // root ignores directory permissions; use a path whose parent is a file instead.
      QTemporaryDir dir;
      const std::filesystem::path file = std::filesystem::path(dir.path().toStdString()) / "file";
      mrcnn::io::writeFileAtomic(file, "keep");
      bool threw = false;
      try {
        mrcnn::io::writeFileAtomic(file / "child.txt", "x");
      } catch (const std::runtime_error& e) {
        threw = true;
        QVERIFY(QString(e.what()).contains("child.txt"));
      }
      QVERIFY(threw);
      QCOMPARE(QString::fromStdString(readAll(file)), QString("keep"));
      return;
    }
    QTemporaryDir dir;
    const std::filesystem::path path = std::filesystem::path(dir.path().toStdString()) / "spec.txt";
    mrcnn::io::writeFileAtomic(path, "keep");
    ::chmod(dir.path().toLocal8Bit().constData(), 0500);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, mrcnn::io::writeFileAtomic(path, "new"));
    ::chmod(dir.path().toLocal8Bit().constData(), 0700);
    QCOMPARE(QString::fromStdString(readAll(path)), QString("keep"));
  }

  // A scratch file (an int8 check's model for OpenVINO) is there while its owner lives and
  // gone after, also when the step using it throws.
  void scratchFilesGoWithTheirOwner() {
    QTemporaryDir dir;
    const std::filesystem::path path = std::filesystem::path(dir.path().toStdString()) / ".m.onnx";
    {
      const mrcnn::io::ScratchFile file(path, "model bytes");
      QCOMPARE(file.path(), path);
      QCOMPARE(QString::fromStdString(readAll(path)), QString("model bytes"));
    }
    QVERIFY(!std::filesystem::exists(path));
    try {
      const mrcnn::io::ScratchFile file(path, "model bytes");
      throw std::runtime_error("the check failed");
    } catch (const std::runtime_error&) {
    }
    QVERIFY(!std::filesystem::exists(path));
  }

  void commandLineErrorsAreUsageErrors() {
    std::ostringstream out, err;
    QCOMPARE(engineMain({"--task", "validate"}, out, err), kExitUsage);
    QVERIFY(QString::fromStdString(err.str()).contains("--spec is required"));
    QCOMPARE(engineMain({"--spec", "x.txt", "--task", "fly"}, out, err), kExitUsage);
    QVERIFY(QString::fromStdString(err.str()).contains("unknown task \"fly\""));
    QCOMPARE(engineMain({"--spec"}, out, err), kExitUsage);
    QCOMPARE(engineMain({"--bogus"}, out, err), kExitUsage);
    QCOMPARE(engineMain({"--help"}, out, err), kExitOk);
    QVERIFY(QString::fromStdString(out.str()).contains("usage: mrcnn-engine"));
  }
};

QTEST_GUILESS_MAIN(EngineTest)
#include "test_engine.moc"

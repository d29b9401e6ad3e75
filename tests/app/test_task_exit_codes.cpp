// The one task harness (engine/harness/task_harness.h): the same bad input gives the same exit
// code in every task, through the real engine. A spec with an error or no spec file at all is 3
// in every task run from a spec; a run directory that cannot be created is 4 in every task that
// writes into one; a missing annotations file is 4 in every task on files; a bad command line 2.
// A task that answered otherwise would have kept an entry of its own.
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/common/process_run.h"

namespace {

using mrcnn::testing::binDir;
using mrcnn::testing::Run;
using mrcnn::testing::runProcess;
using mrcnn::testing::sourceDir;
using mrcnn::testing::writeFile;

Run engine(const QStringList& args) {
  return runProcess(binDir() + "/mrcnn-engine", args, QProcessEnvironment::systemEnvironment(),
                    120000);
}

// Every task run from a spec, with the options each needs to get as far as its entry.
struct SpecTask {
  QString name;
  QStringList extra;
  bool writes_run_dir;  // the run directory gets its events (with --run-dir given)
};

std::vector<SpecTask> specTasks(const QString& out_dir) {
  return {{"validate", {}, false},
          {"train", {}, true},
          {"evaluate", {}, true},
          {"inference", {}, true},
          {"dataset_convert", {}, true},
          {"dataset_stats", {}, true},
          {"export", {}, true},
          {"prune", {"--output-dir", out_dir}, true},
          {"benchmark", {"--steps", "1"}, false}};
}

}  // namespace

class TestTaskExitCodes : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  QString good_spec_, bad_spec_, blocked_run_dir_;

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    good_spec_ = sourceDir() + "/specs/shapes_resnet18.txt";
    // One error: a field the schema does not have (line 2).
    bad_spec_ = writeFile(dir_, "bad.txt", "seed: 1\nno_such_field: 3\n");
    // A run directory under a regular file: no task can create it.
    const QString file = writeFile(dir_, "a_file", "not a folder\n");
    blocked_run_dir_ = file + "/run";
  }

  void specWithAnErrorIs3InEveryTask() {
    for (const SpecTask& t : specTasks(dir_.filePath("out_bad"))) {
      const Run r = engine(QStringList{"--spec", bad_spec_, "--task", t.name} + t.extra);
      QVERIFY2(r.code == 3, qPrintable(t.name + ": exit " + QString::number(r.code) + "\n" + r.err));
      QVERIFY2(r.err.contains("bad.txt:2"), qPrintable(t.name + ": " + r.err));
      // validate and train also count the training data the spec lacks.
      QVERIFY2(r.err.contains(" in " + bad_spec_ + "; nothing was run"),
               qPrintable(t.name + ": " + r.err));
    }
  }

  void missingSpecFileIs3InEveryTask() {
    const QString missing = dir_.filePath("no_such_spec.txt");
    for (const SpecTask& t : specTasks(dir_.filePath("out_missing"))) {
      const Run r = engine(QStringList{"--spec", missing, "--task", t.name} + t.extra);
      QVERIFY2(r.code == 3, qPrintable(t.name + ": exit " + QString::number(r.code) + "\n" + r.err));
      QVERIFY2(r.err.contains("no_such_spec.txt"), qPrintable(t.name + ": " + r.err));
    }
  }

  void unusableRunDirectoryIs4InEveryTaskThatWritesOne() {
    int checked = 0;
    for (const SpecTask& t : specTasks(dir_.filePath("out_blocked"))) {
      if (!t.writes_run_dir) continue;
      const Run r = engine(QStringList{"--spec", good_spec_, "--task", t.name, "--run-dir",
                                       blocked_run_dir_} +
                           t.extra);
      QVERIFY2(r.code == 4, qPrintable(t.name + ": exit " + QString::number(r.code) + "\n" + r.err));
      QVERIFY2(r.err.contains(blocked_run_dir_), qPrintable(t.name + ": " + r.err));
      ++checked;
    }
    QCOMPARE(checked, 7);
    // Nothing was written beside it either.
    QVERIFY(!QDir(dir_.filePath("out_blocked")).exists());
  }

  void missingAnnotationsAre4InEveryTaskOnFiles() {
    const QString missing = dir_.filePath("no_such_annotations.json");
    const QList<QStringList> tasks = {
        {"--task", "evaluate", "--annotations", missing, "--results", missing},
        {"--task", "dataset_stats", "--annotations", missing},
        {"--task", "dataset_convert", "--image-dir", dir_.path(), "--annotations", missing,
         "--output-dir", dir_.filePath("shards")}};
    for (const QStringList& args : tasks) {
      const Run r = engine(args);
      QVERIFY2(r.code == 4, qPrintable(args[1] + ": exit " + QString::number(r.code) + "\n" + r.err));
      QVERIFY2(r.err.contains("no_such_annotations.json"), qPrintable(args[1] + ": " + r.err));
    }
  }

  // --count-syncs where no GPU runs the step: the benchmark still runs (exit 0), a warning
  // says why nothing was counted, and no file is written.
  void countSyncsOnTheCpuWarnsAndWritesNothing() {
    const QString file = dir_.filePath("syncs.json");
    const Run r = engine({"--spec", good_spec_, "--task", "benchmark", "--steps", "1", "--set",
                          "device=cpu", "--set", "train_batch_size=1", "--count-syncs", file});
    QVERIFY2(r.code == 0, qPrintable(explain(r)));
    QVERIFY2(r.out.contains("\"code\":\"count_syncs\"") && r.out.contains("the device is cpu"),
             qPrintable(r.out));
    QVERIFY(!QFileInfo::exists(file));
  }

  void badCommandLineIs2() {
    const Run unknown = engine({"--spec", good_spec_, "--task", "train", "--no-such-option"});
    QCOMPARE(unknown.code, 2);
    const Run task = engine({"--spec", good_spec_, "--task", "no_such_task"});
    QCOMPARE(task.code, 2);
    QVERIFY2(task.err.contains("no_such_task"), qPrintable(task.err));
  }
};

QTEST_GUILESS_MAIN(TestTaskExitCodes)
#include "test_task_exit_codes.moc"

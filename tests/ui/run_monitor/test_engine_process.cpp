// The engine as the GUI runs it (ui/run_monitor/engine_process.h), against
// tests/ui/run_monitor/fake_engine.sh: an engine that crashes, is killed, ends without a done
// event or cannot start is reported as such; Stop sends SIGINT and the run shows stopped,
// Resume continues it in the same directory; a second Stop kills an engine that ignores the
// first.
#include <signal.h>

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/ui/run_monitor/test_lines.h"
#include "ui/run_monitor/engine_process.h"
#include "ui/run_monitor/run_model.h"
#include "ui/run_monitor/runs_view.h"

using namespace mrcnn::ui;
using mrcnn::testing::J;
using mrcnn::testing::readLines;
using mrcnn::testing::writeLines;

// Starts a training run of the fake engine in `mode` from `view`; true once it has ended
// (within 10 s) and the view shows it.
bool runToTheEnd(RunsView& view, const char* mode, const QString& dir) {
  qputenv("FAKE_ENGINE_MODE", mode);
  QSignalSpy finished(&view, &RunsView::runFinished);
  view.startRun("spec.txt", "train", dir);
  if (!finished.wait(10000)) return false;
  view.refreshNow();
  return true;
}

class EngineProcessTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(QFileInfo(MRCNN_FAKE_ENGINE).isExecutable(), MRCNN_FAKE_ENGINE);
    qputenv("MRCNN_ENGINE", MRCNN_FAKE_ENGINE);
  }

  // An engine that reports an error and exits 1 without done: a crash, with both shown.
  void crashedEngineIsReported() {
    QTemporaryDir dir;
    RunsView view;
    QVERIFY(runToTheEnd(view, "crash", dir.path()));
    const RunModel* m = view.run(0);
    QCOMPARE(m->status(), RunStatus::Crashed);
    QVERIFY(m->processExit());
    QCOMPARE(m->processExit()->exit_code, 1);
    QVERIFY(!m->processExit()->signal);
    QVERIFY(m->lastError().contains("the loss became NaN at step 3"));
    QVERIFY2(view.statusText().contains("crashed"), qPrintable(view.statusText()));
    QVERIFY(view.statusText().contains("exit code 1 (the task failed while running)"));
    QVERIFY(view.statusText().contains("the loss became NaN at step 3"));
    QCOMPARE(m->series("loss_total")->size(), 3);
    QVERIFY(view.logText().contains("loading the checkpoint"));  // stderr reaches the log
    QVERIFY(view.resumeEnabled());
    QVERIFY(!view.stopEnabled());
  }

  // SIGKILL (the OOM killer): the signal and the last line of stderr are what we know.
  void killedEngineIsReported() {
    QTemporaryDir dir;
    RunsView view;
    QVERIFY(runToTheEnd(view, "killed", dir.path()));
    const RunModel* m = view.run(0);
    QCOMPARE(m->status(), RunStatus::Crashed);
    QVERIFY(m->processExit()->signal);
    QCOMPARE(m->processExit()->exit_code, 9);
    QCOMPARE(m->lastError(), QString("about to run out of memory"));
    QVERIFY2(view.statusText().contains("signal 9"), qPrintable(view.statusText()));
    QVERIFY(view.statusText().contains("about to run out of memory"));
  }

  void engineEndingWithoutDoneIsACrash() {
    RunModel model;
    EngineProcess p(&model);
    qputenv("FAKE_ENGINE_MODE", "silent");
    QSignalSpy finished(&p, &EngineProcess::finished);
    QVERIFY(p.start({"spec.txt", "train", "", {}}));
    QVERIFY(finished.wait(10000));
    QCOMPARE(model.status(), RunStatus::Crashed);
    QCOMPARE(model.processExit()->exit_code, 0);
    QVERIFY(model.lastError().contains("without a done event"));

    // A resumed engine that dies before saying anything: the earlier leg's `done stopped`
    // must not make it look stopped or merely failed.
    RunModel resumed;
    resumed.addLine(J("{'type':'start','task':'train'}"));
    resumed.addLine(J("{'type':'done','status':'stopped'}"));
    EngineProcess again(&resumed);
    qputenv("MRCNN_ENGINE", "/bin/false");
    QSignalSpy again_finished(&again, &EngineProcess::finished);
    again.start({"spec.txt", "train", "", {}});
    QVERIFY(again_finished.wait(10000));
    qputenv("MRCNN_ENGINE", MRCNN_FAKE_ENGINE);
    QCOMPARE(resumed.status(), RunStatus::Crashed);
    QCOMPARE(resumed.processExit()->exit_code, 1);
  }

  void missingEngineIsReported() {
    RunModel model;
    EngineProcess p(&model);
    qputenv("MRCNN_ENGINE", "/nonexistent/mrcnn-engine");
    QSignalSpy finished(&p, &EngineProcess::finished);
    p.start({"spec.txt", "train", "", {}});
    QVERIFY(finished.count() > 0 || finished.wait(10000));
    qputenv("MRCNN_ENGINE", MRCNN_FAKE_ENGINE);
    QCOMPARE(model.status(), RunStatus::Crashed);
    QVERIFY2(model.lastError().contains("cannot start the engine /nonexistent/mrcnn-engine"),
             qPrintable(model.lastError()));
  }

  // Stop sends SIGINT; the engine answers done stopped and the run shows stopped; Resume runs
  // --task train on the same directory with the spec as run and continues the curves.
  void stopAndResume() {
    QTemporaryDir dir;
    writeLines(dir.filePath("spec.txt"), {"num_epochs: 1"});
    const QString args_file = dir.filePath("args.txt");
    qputenv("FAKE_ENGINE_ARGS", args_file.toUtf8());
    qputenv("FAKE_ENGINE_MODE", "stop");
    RunsView view;
    QSignalSpy finished(&view, &RunsView::runFinished);
    view.startRun("/specs/my_spec.txt", "train", dir.path());
    QTRY_VERIFY_WITH_TIMEOUT(
        view.run(0)->series("loss_total") && view.run(0)->series("loss_total")->size() >= 3, 10000);
    QTRY_VERIFY(view.stopEnabled());
    QCOMPARE(view.runningEngines(), 1);
    QTRY_VERIFY(view.progressText().contains("ETA"));  // from the rate of the steps so far
    QVERIFY(view.progressText().contains("/ 100"));
    view.stopCurrent();
    QCOMPARE(view.run(0)->status(), RunStatus::Stopping);
    QVERIFY(finished.count() > 0 || finished.wait(10000));
    view.refreshNow();
    const RunModel* m = view.run(0);
    QCOMPARE(m->status(), RunStatus::Stopped);
    QVERIFY2(view.statusText().startsWith("Stopped at step"), qPrintable(view.statusText()));
    QCOMPARE(view.engine(0)->stopRequests(), 1);  // one signal was enough
    QVERIFY2(m->summary().endsWith("by SIGINT"), qPrintable(m->summary()));
    QVERIFY(view.resumeEnabled());
    const double stopped_at = m->step();

    view.resumeCurrent();
    QTRY_VERIFY_WITH_TIMEOUT(view.run(0)->step() > stopped_at + 1, 10000);
    QCOMPARE(view.run(0)->status(), RunStatus::Running);
    // The curve continues from where it stopped: no step repeats.
    const Series* s = view.run(0)->series("loss_total");
    for (int i = 1; i < s->size(); ++i)
      QVERIFY(s->steps[i] > s->steps[i - 1]);
    view.stopCurrent();
    QTRY_COMPARE_WITH_TIMEOUT(view.run(0)->status(), RunStatus::Stopped, 10000);

    const QStringList args = readLines(args_file);
    QCOMPARE(args.size(), 2);
    QCOMPARE(args[0],
             QStringLiteral("--spec /specs/my_spec.txt --task train --run-dir %1").arg(dir.path()));
    QCOMPARE(args[1],
             QStringLiteral("--spec %1/spec.txt --task train --run-dir %1").arg(dir.path()));
    qunsetenv("FAKE_ENGINE_ARGS");
  }

  // An engine that ignores the graceful stop: the second Stop kills it.
  void secondStopKills() {
    QTemporaryDir dir;
    qputenv("FAKE_ENGINE_MODE", "stop");
    RunModel model;
    EngineProcess p(&model);
    QSignalSpy finished(&p, &EngineProcess::finished);
    p.start({"spec.txt", "train", dir.path(), {}});
    QTRY_VERIFY_WITH_TIMEOUT(model.step() >= 1, 10000);
    // Make this engine deaf to SIGINT by stopping it (SIGSTOP is not catchable); SIGKILL
    // still ends it.
    ::kill(static_cast<pid_t>(p.processId()), SIGSTOP);
    p.stop();
    QTest::qWait(300);
    QVERIFY(p.isRunning());
    p.stop();
    QVERIFY(finished.count() > 0 || finished.wait(10000));
    QCOMPARE(p.stopRequests(), 2);
    QCOMPARE(model.status(), RunStatus::Crashed);
    QVERIFY(model.processExit()->signal);
    QCOMPARE(model.processExit()->exit_code, 9);
  }
};

QTEST_MAIN(EngineProcessTest)
#include "test_engine_process.moc"

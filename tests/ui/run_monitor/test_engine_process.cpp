// The engine as the GUI runs it (ui/run_monitor/engine_process.h), against
// tests/ui/run_monitor/fake_engine.sh: an engine that crashes, is killed, ends without a done
// event or cannot start is reported as such; Stop sends SIGINT and the run shows stopped,
// Resume continues it in the same directory; a second Stop kills an engine that ignores the
// first. A data-parallel training run (the Processes box above 1) runs the workbench's
// launcher in the engine's place, and keeps its number of processes when resumed.
#include <signal.h>

#include <QComboBox>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/ui/run_monitor/test_lines.h"
#include "ui/run_monitor/engine_process.h"
#include "remote/hosts.h"
#include "ui/run_monitor/host_box.h"
#include "ui/run_monitor/process_count_box.h"
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

  // Killed in the middle of writing a line: the events before it count, the cut line is a
  // warning in the log, the run is a crash with the signal; the view goes on working.
  void outputCutMidLine() {
    QTemporaryDir dir;
    RunsView view;
    QVERIFY(runToTheEnd(view, "cut", dir.path()));
    const RunModel* m = view.run(0);
    QCOMPARE(m->status(), RunStatus::Crashed);
    QVERIFY(m->processExit()->signal);
    QCOMPARE(m->series("loss_total")->size(), 2);
    QVERIFY2(view.logText().contains("{\"v\":1,\"type\":\"progress\",\"time\":1763776003,\"st"),
             qPrintable(view.logText()));
    QVERIFY2(view.statusText().contains("signal 9"), qPrintable(view.statusText()));
    QVERIFY(view.resumeEnabled());
    QVERIFY(runToTheEnd(view, "silent", dir.path()));  // the next run starts normally
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

  // One process runs the engine as before; two run the launcher (beside the engine unless
  // $MRCNN_WORKBENCH says otherwise) with the engine's arguments after its own, rank 0's
  // events unrendered. Guards against a data-parallel run started as one engine, or the
  // launcher rendering events the monitor cannot read.
  void commandForOneAndTwoProcesses() {
    qputenv("MRCNN_ENGINE", "/opt/mrcnn/bin/mrcnn-engine");
    qunsetenv("MRCNN_WORKBENCH");
    EngineProcess::Options o{"/specs/a.txt", "train", "/runs/a", {"solver.lr=0.02"}};
    const QStringList engine_args = {"--spec",    "/specs/a.txt", "--task", "train",
                                     "--run-dir", "/runs/a",      "--set",  "solver.lr=0.02"};
    EngineProcess::Command one = EngineProcess::command(o);
    QCOMPARE(one.program, QString("/opt/mrcnn/bin/mrcnn-engine"));
    QCOMPARE(one.arguments, engine_args);

    o.nproc_per_node = 2;
    const EngineProcess::Command two = EngineProcess::command(o);
    QCOMPARE(two.program, QString("/opt/mrcnn/bin/mrcnn-workbench"));
    QCOMPARE(two.arguments,
             QStringList({"--headless", "--raw-events", "--nproc-per-node", "2"}) + engine_args);
    QCOMPARE(EngineProcess::arguments(o), engine_args);  // the engine's part is unchanged

    qputenv("MRCNN_WORKBENCH", "/elsewhere/mrcnn-workbench");
    QCOMPARE(EngineProcess::command(o).program, QString("/elsewhere/mrcnn-workbench"));
    qunsetenv("MRCNN_WORKBENCH");
    qputenv("MRCNN_ENGINE", MRCNN_FAKE_ENGINE);
  }

  // The Run-on box lists this machine and the hosts file's hosts; a host chosen there sends
  // train runs (only those) through the launcher's --host, with the engine's arguments after
  // it; a host gone from the file falls back to this machine.
  void hostBoxSendsTrainRunsToAHost() {
    QTemporaryDir dir;
    qputenv("XDG_CONFIG_HOME", dir.filePath("config").toUtf8());
    mrcnn::remote::HostsFile hosts;
    mrcnn::remote::Host gpu;
    gpu.name = "gpu1";
    gpu.destination = "me@gpu1.lab";
    gpu.engine = "/opt/mrcnn/bin/mrcnn-engine";
    gpu.work_dir = "/scratch/me";
    hosts.hosts.push_back(gpu);
    mrcnn::remote::saveHosts(mrcnn::remote::defaultHostsPath(), hosts);

    RunsView view;
    HostBox box(&view);
    QComboBox* combo = box.comboBox();
    QCOMPARE(combo->itemText(0), QString("This machine"));
    QCOMPARE(combo->itemText(1), QString("gpu1 (me@gpu1.lab)"));
    QCOMPARE(combo->itemText(combo->count() - 1), QString("Edit Hosts…"));
    QSignalSpy edit(&box, &HostBox::editRequested);
    emit combo->activated(combo->count() - 1);
    QCOMPARE(edit.count(), 1);
    QCOMPARE(view.trainHost(), QString());
    emit combo->activated(1);
    QCOMPARE(view.trainHost(), QString("gpu1"));

    qputenv("MRCNN_WORKBENCH", "/opt/mrcnn/bin/mrcnn-workbench");
    EngineProcess::Options o{"/specs/a.txt", "train", "/runs/a", {}};
    o.host = "gpu1";
    const EngineProcess::Command command = EngineProcess::command(o);
    QCOMPARE(command.program, QString("/opt/mrcnn/bin/mrcnn-workbench"));
    QCOMPARE(command.arguments, QStringList({"--headless", "--raw-events", "--host", "gpu1", "--spec",
                                             "/specs/a.txt", "--task", "train", "--run-dir", "/runs/a"}));
    qputenv("MRCNN_WORKBENCH", MRCNN_FAKE_ENGINE);
    qputenv("FAKE_ENGINE_MODE", "silent");
    view.startRun("spec.txt", "train", dir.filePath("train"));
    QCOMPARE(view.engine(0)->options().host, QString("gpu1"));
    view.startRun("spec.txt", "evaluate", dir.filePath("eval"));
    QCOMPARE(view.engine(1)->options().host, QString());
    QSignalSpy finished(&view, &RunsView::runFinished);
    QTRY_VERIFY_WITH_TIMEOUT(!view.engine(0)->isRunning() && !view.engine(1)->isRunning(), 10000);

    // A run reopened from its folder that went to a host (remote.json, which the launcher
    // writes): Resume sends it back there with the spec it went with.
    const QString reopened = dir.filePath("reopened");
    QDir().mkpath(reopened);
    writeLines(QDir(reopened).filePath("events.jsonl"),
               {R"({"v":1,"type":"start","time":1,"task":"train","device":"cpu","totalSteps":4})",
                R"({"v":1,"type":"done","time":2,"status":"stopped","summary":"stopped"})"});
    writeLines(QDir(reopened).filePath("remote.json"),
               {R"({"host":"gpu1","spec":"/specs/a.txt","run_dir":"/scratch/me/runs/a"})"});
    RunsView later;
    later.openRun(reopened);
    later.refreshNow();
    QVERIFY(later.resumeEnabled());
    later.resumeCurrent();
    QCOMPARE(later.engine(0)->options().host, QString("gpu1"));
    QCOMPARE(later.engine(0)->options().spec_path, QString("/specs/a.txt"));
    QTRY_VERIFY_WITH_TIMEOUT(!later.engine(0)->isRunning(), 10000);

    mrcnn::remote::saveHosts(mrcnn::remote::defaultHostsPath(), {});
    box.reload();
    QCOMPARE(view.trainHost(), QString());
    QCOMPARE(combo->currentIndex(), 0);
    qunsetenv("XDG_CONFIG_HOME");
    qunsetenv("MRCNN_WORKBENCH");
    qunsetenv("FAKE_ENGINE_MODE");
  }

  // The Processes box sets how many processes a train run gets; the launcher runs it (the
  // fake engine stands in for it and records its arguments), Resume keeps the number, and an
  // evaluation on the same setting still runs one engine.
  void processesBoxSetsTrainRuns() {
    QTemporaryDir dir;
    const QString args_file = dir.filePath("args.txt");
    qputenv("FAKE_ENGINE_ARGS", args_file.toUtf8());
    qputenv("MRCNN_WORKBENCH", MRCNN_FAKE_ENGINE);
    qputenv("FAKE_ENGINE_MODE", "stop");
    RunsView view;
    ProcessCountBox box(&view);
    QCOMPARE(box.spinBox()->value(), 1);  // one process unless asked
    box.spinBox()->setMaximum(4);         // whatever this machine has
    box.spinBox()->setValue(2);
    QCOMPARE(view.trainProcesses(), 2);

    const QString train_dir = dir.filePath("train");
    view.startRun("spec.txt", "train", train_dir);
    QCOMPARE(view.engine(0)->options().nproc_per_node, 2);
    QTRY_VERIFY_WITH_TIMEOUT(view.run(0)->step() >= 1, 10000);
    QSignalSpy finished(&view, &RunsView::runFinished);
    view.stopCurrent();
    // The run's log on failure: this check has failed twice in about 15 runs, not reproduced.
    QVERIFY2(finished.count() > 0 || finished.wait(10000), qPrintable(view.run(0)->log().join('\n')));
    view.refreshNow();
    QVERIFY2(view.run(0)->status() == RunStatus::Stopped, qPrintable(view.run(0)->log().join('\n')));
    QVERIFY(view.resumeEnabled());
    box.spinBox()->setValue(1);  // a new setting is for new runs, not for this one
    view.resumeCurrent();
    QCOMPARE(view.engine(0)->options().nproc_per_node, 2);
    QTRY_VERIFY_WITH_TIMEOUT(view.run(0)->status() == RunStatus::Running, 10000);
    view.stopCurrent();
    QTRY_COMPARE_WITH_TIMEOUT(view.run(0)->status(), RunStatus::Stopped, 10000);

    box.spinBox()->setValue(2);
    qputenv("FAKE_ENGINE_MODE", "silent");
    QSignalSpy eval_finished(&view, &RunsView::runFinished);
    view.startRun("spec.txt", "evaluate", dir.filePath("eval"));
    QCOMPARE(view.engine(1)->options().nproc_per_node, 1);
    QVERIFY(eval_finished.wait(10000));

    const QStringList args = readLines(args_file);
    QCOMPARE(args.size(), 3);
    const QString launcher = "--headless --raw-events --nproc-per-node 2 ";
    QCOMPARE(args[0],
             launcher + QString("--spec spec.txt --task train --run-dir %1").arg(train_dir));
    QCOMPARE(args[1], args[0]);  // the fake engine writes no spec.txt to resume from
    QCOMPARE(args[2],
             QString("--spec spec.txt --task evaluate --run-dir %1").arg(dir.filePath("eval")));
    const QString train_log = view.run(0)->log().join('\n');
    QVERIFY2(
        train_log.contains("$ " MRCNN_FAKE_ENGINE " --headless --raw-events"),
        qPrintable(
            train_log));  // the command shown is the one run  // the command shown is the one run
    qunsetenv("MRCNN_WORKBENCH");
    qunsetenv("FAKE_ENGINE_ARGS");
  }

  // A run reopened from its events.jsonl resumes with the processes its start event names.
  void reopenedRunResumesWithItsProcesses() {
    QTemporaryDir dir;
    writeLines(dir.filePath("events.jsonl"),
               {J("{'v':1,'type':'start','time':1,'task':'train','worldSize':2,'totalSteps':100}"),
                J("{'v':1,'type':'progress','time':2,'step':5,'losses':{'total':1.0}}"),
                J("{'v':1,'type':'done','time':3,'status':'stopped'}")});
    writeLines(dir.filePath("spec.txt"), {"num_epochs: 1"});
    qputenv("MRCNN_WORKBENCH", MRCNN_FAKE_ENGINE);
    qputenv("FAKE_ENGINE_MODE", "silent");
    RunsView view;
    view.openRun(dir.path());
    QCOMPARE(view.run(0)->worldSize(), 2);
    QSignalSpy finished(&view, &RunsView::runFinished);
    view.resumeCurrent();
    QVERIFY(view.engine(0));
    QCOMPARE(view.engine(0)->options().nproc_per_node, 2);
    QVERIFY(finished.wait(10000));
    qunsetenv("MRCNN_WORKBENCH");
  }

  // CUDA_VISIBLE_DEVICES limits the GPUs offered as CUDA reads it: up to its first invalid
  // entry, never more than the driver has.
  void gpuCountFollowsCudaVisibleDevices() {
    QCOMPARE(ProcessCountBox::visibleGpus(4, std::nullopt), 4);
    QCOMPARE(ProcessCountBox::visibleGpus(4, QString("0,2")), 2);
    QCOMPARE(ProcessCountBox::visibleGpus(4, QString("")), 0);
    QCOMPARE(ProcessCountBox::visibleGpus(4, QString("1,-1,2")), 1);
    QCOMPARE(ProcessCountBox::visibleGpus(2, QString("0,1,2,3")), 2);
    QCOMPARE(ProcessCountBox::visibleGpus(0, QString("0")), 0);
    QVERIFY(ProcessCountBox::processLimit() >= 1);
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

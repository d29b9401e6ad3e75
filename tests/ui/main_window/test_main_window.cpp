// The main window: it opens with its views, docks, menus and shortcuts; recent specs are
// kept across sessions; the window's geometry, docks and current view are restored; the
// title shows the spec and its modified flag; the About box's versions are real; closing with
// engines running asks, and "Stop runs and quit" stops them (gracefully, else killed after the
// stop timeout) before the window closes.
#include <google/protobuf/stubs/common.h>

#include <QAction>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QMenu>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "ui/dataset_browser/dataset_browser.h"
#include "ui/main_window/main_window.h"
#include "ui/main_window/recent_items.h"
#include "ui/main_window/versions.h"
#include "ui/predictions/prediction_view.h"
#include "ui/run_monitor/engine_process.h"
#include "ui/run_monitor/run_model.h"
#include "ui/run_monitor/runs_view.h"
#include "ui/spec_editor/field_editors.h"
#include "ui/spec_editor/spec_editor.h"
#include "ui/spec_editor/spec_form.h"
#include "ui/warnings/warning_review.h"

using namespace mrcnn::ui;

namespace {

QString sourcePath(const QString& relative) {
  const QString root = qEnvironmentVariable("MRCNN_SOURCE_DIR");
  if (root.isEmpty()) qFatal("MRCNN_SOURCE_DIR is not set (ctest sets it)");
  return root + u'/' + relative;
}

QAction* findAction(QWidget* window, const QKeySequence& keys) {
  for (QAction* a : window->findChildren<QAction*>()) {
    if (a->shortcut() == keys) return a;
  }
  return nullptr;
}

}  // namespace

class MainWindowTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    // Settings go to a folder of this test, never the user's.
    QCoreApplication::setOrganizationName(u"mrcnn-workbench-test"_qs);
    QCoreApplication::setApplicationName(u"test_ui_main_window"_qs);
    QVERIFY(settings_dir_.isValid());
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, settings_dir_.path());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settings_dir_.path());
  }

  void init() { QSettings().clear(); }

  void recentItemsArePersisted() {
    {
      RecentItems recent;
      for (int i = 0; i < 12; ++i)
        recent.add(RecentItems::Kind::Spec, u"/specs/s%1.txt"_qs.arg(i));
      recent.add(RecentItems::Kind::Spec, u"/specs/s5.txt"_qs);  // again: moves to the front
      recent.add(RecentItems::Kind::Dataset, u"/data/coco.json"_qs);
      recent.add(RecentItems::Kind::Run, u"/runs/a"_qs);
    }
    RecentItems again;  // a new session
    const QStringList specs = again.items(RecentItems::Kind::Spec);
    QCOMPARE(specs.size(), RecentItems::kMaxItems);
    QCOMPARE(specs.front(), u"/specs/s5.txt"_qs);
    QCOMPARE(specs.count(u"/specs/s5.txt"_qs), 1);
    QCOMPARE(specs[1], u"/specs/s11.txt"_qs);
    QVERIFY(!specs.contains(u"/specs/s0.txt"_qs));  // the oldest fell off
    QCOMPARE(again.items(RecentItems::Kind::Dataset), QStringList{u"/data/coco.json"_qs});
    QCOMPARE(again.items(RecentItems::Kind::Run), QStringList{u"/runs/a"_qs});
    again.add(RecentItems::Kind::Dataset, u"/data/val.json"_qs, u"/data/val2017"_qs);
    QCOMPARE(RecentItems().companion(RecentItems::Kind::Dataset, u"/data/val.json"_qs),
             u"/data/val2017"_qs);
  }

  // Run in the spec editor starts the task in the Runs view, in the run directory the spec
  // names, and the run joins the recent runs.
  void runStartsTheTaskInTheRunsView() {
    QTemporaryDir dir;
    const QString engine = dir.filePath(u"fake-engine"_qs);
    {
      QFile script(engine);
      QVERIFY(script.open(QIODevice::WriteOnly));
      script.write("#!/bin/sh\necho \"$@\" > \"$(dirname \"$0\")/args.txt\"\nexit 0\n");
      script.close();
      script.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    }
    qputenv("MRCNN_ENGINE", engine.toLocal8Bit());
    const QString spec = dir.filePath(u"exp.txt"_qs);
    QVERIFY(QFile::copy(sourcePath(u"specs/shapes_resnet18.txt"_qs), spec));
    MainWindow window;
    QVERIFY(window.openSpec(spec, false));
    window.specEditor()->setTask(u"train"_qs);
    QVERIFY(window.specEditor()->requestRun());
    QCOMPARE(window.currentView(), MainWindow::View::Runs);
    auto* runs = qobject_cast<RunsView*>(window.view(MainWindow::View::Runs));
    QCOMPARE(runs->runCount(), 1);
    // output_dir "../runs" from the spec's folder, run name the spec's file name.
    const QString run_dir = QDir::cleanPath(dir.path() + u"/../runs/exp"_qs);
    QCOMPARE(runs->runDir(0), run_dir);
    QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(dir.filePath(u"args.txt"_qs)), 5000);
    QFile args(dir.filePath(u"args.txt"_qs));
    QVERIFY(args.open(QIODevice::ReadOnly));
    const QString line = QString::fromUtf8(args.readAll());
    QVERIFY2(line.contains(u"--spec "_qs + QFileInfo(spec).absoluteFilePath()), qPrintable(line));
    QVERIFY2(line.contains(u"--task train"_qs), qPrintable(line));
    QCOMPARE(RecentItems().items(RecentItems::Kind::Run).value(0), run_dir);
    qunsetenv("MRCNN_ENGINE");
  }

  void openingASpecRecordsItAndTitlesTheWindow() {
    const QString spec = sourcePath(u"specs/shapes_resnet18.txt"_qs);
    MainWindow window;
    QString error;
    QVERIFY2(window.openSpec(spec, /*interactive=*/false, &error), qPrintable(error));
    QCOMPARE(window.currentView(), MainWindow::View::Experiments);
    QCOMPARE(RecentItems().items(RecentItems::Kind::Spec).front(),
             QFileInfo(spec).absoluteFilePath());
    QVERIFY(window.windowTitle().startsWith(u"shapes_resnet18.txt[*]"_qs));
    QVERIFY(!window.isWindowModified());
    qobject_cast<QSpinBox*>(window.specEditor()->form()->editor(u"total_steps"_qs)->input())
        ->setValue(99);
    QVERIFY(window.isWindowModified());
    // The recent menu lists it.
    QMenu* recent = nullptr;
    for (QMenu* m : window.menuBar()->findChildren<QMenu*>()) {
      if (m->title() == u"Open &Recent"_qs) recent = m;
    }
    QVERIFY(recent);
    QVERIFY(recent->actions().front()->text().endsWith(u"shapes_resnet18.txt"_qs));
    window.specEditor()->textEdit()->document()->setModified(false);  // no question on close
  }

  void opensWithItsViewsMenusAndShortcuts() {
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(qobject_cast<SpecEditor*>(window.view(MainWindow::View::Experiments)));
    auto* tabs = qobject_cast<QTabWidget*>(window.centralWidget());
    QVERIFY(tabs);
    int views = 0;
    for (int i = 0; i < MainWindow::kViewCount; ++i) {
      QWidget* w = window.view(static_cast<MainWindow::View>(i));
      if (!w) continue;
      ++views;
      QVERIFY(tabs->indexOf(w) >= 0);
      // Ctrl+1..5 switch to the views.
      QAction* a =
          findAction(&window, QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
      QVERIFY2(a, qPrintable(u"no shortcut for view %1"_qs.arg(i + 1)));
      a->trigger();
      QCOMPARE(tabs->currentWidget(), w);
    }
    QCOMPARE(tabs->count(), views);
    QCOMPARE(views, MainWindow::kViewCount);  // Experiments, Runs, Dataset, Predictions, Warnings
    QVERIFY(qobject_cast<RunsView*>(window.view(MainWindow::View::Runs)));
    QVERIFY(qobject_cast<DatasetBrowser*>(window.view(MainWindow::View::Dataset)));
    QVERIFY(qobject_cast<PredictionView*>(window.view(MainWindow::View::Predictions)));
    QVERIFY(qobject_cast<WarningReview*>(window.view(MainWindow::View::Warnings)));
    for (const auto keys : {QKeySequence::Open, QKeySequence::Save, QKeySequence::SaveAs,
                            QKeySequence::Undo, QKeySequence::Redo, QKeySequence::Quit}) {
      QVERIFY2(findAction(&window, QKeySequence(keys)), qPrintable(QKeySequence(keys).toString()));
    }
    QAction* run = findAction(&window, QKeySequence(Qt::CTRL | Qt::Key_R));
    QVERIFY(run);
    QVERIFY(window.problemsDock()->isVisible());
    QVERIFY(window.recentDock()->isVisible());
    QVERIFY(window.problemsDock()->widget());

    // Run on a spec with errors is refused: nothing is requested.
    QSignalSpy runs(window.specEditor(), &SpecEditor::runRequested);
    window.specEditor()->setText(u"nlayers: 3\n"_qs);
    run->trigger();
    QCOMPARE(runs.size(), 0);
    window.specEditor()->textEdit()->document()->setModified(false);
  }

  void restoresItsState() {
    {
      MainWindow window;
      window.show();
      QVERIFY(QTest::qWaitForWindowExposed(&window));
      window.resize(1000, 700);
      window.recentDock()->hide();
      window.removeDockWidget(window.problemsDock());
      window.addDockWidget(Qt::RightDockWidgetArea, window.problemsDock());
      window.problemsDock()->show();
      window.specEditor()->splitter()->setSizes({300, 600});
      QCoreApplication::processEvents();
      QVERIFY(window.close());
    }
    MainWindow again;
    again.show();
    QVERIFY(QTest::qWaitForWindowExposed(&again));
    QCOMPARE(again.size(), QSize(1000, 700));
    QVERIFY(!again.recentDock()->isVisible());
    QVERIFY(again.problemsDock()->isVisible());
    QCOMPARE(again.dockWidgetArea(again.problemsDock()), Qt::RightDockWidgetArea);
    const QList<int> sizes = again.specEditor()->splitter()->sizes();
    QVERIFY2(sizes[0] < sizes[1], qPrintable(u"%1 %2"_qs.arg(sizes[0]).arg(sizes[1])));
  }

  // Closing while an engine trains: Cancel keeps the window and the engine; "Stop runs and
  // quit" stops it gracefully (done stopped, a checkpoint) and then closes.
  void closingWithARunningEngineAsksAndStopsIt() {
    QTemporaryDir dir;
    qputenv("MRCNN_ENGINE", MRCNN_FAKE_ENGINE);
    qputenv("FAKE_ENGINE_MODE", "stop");
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    RunsView* runs = window.runsView();
    runs->startRun(u"/specs/s.txt"_qs, u"train"_qs, dir.path());
    QTRY_VERIFY(runs->run(0)->step() >= 2);
    QCOMPARE(runs->runningEngines(), 1);

    QList<int> asked;
    window.setRunningEnginesQuestion([&asked](QWidget*, int running) {
      asked << running;
      return MainWindow::RunningEnginesAnswer::Cancel;
    });
    QVERIFY(!window.close());
    QCOMPARE(asked, QList<int>{1});
    QVERIFY(window.isVisible());
    QCOMPARE(runs->runningEngines(), 1);  // still training
    QCOMPARE(runs->engine(0)->stopRequests(), 0);

    window.setRunningEnginesQuestion([&asked](QWidget*, int running) {
      asked << running;
      return MainWindow::RunningEnginesAnswer::StopAndQuit;
    });
    QElapsedTimer clock;
    clock.start();
    QVERIFY(!window.close());  // not yet: the engine is stopping
    QVERIFY(window.isStoppingToQuit());
    QCOMPARE(window.currentView(), MainWindow::View::Runs);
    QTRY_VERIFY_WITH_TIMEOUT(!window.isVisible(), 10000);
    QCOMPARE(asked, (QList<int>{1, 1}));
    QCOMPARE(runs->runningEngines(), 0);
    QCOMPARE(runs->run(0)->status(), RunStatus::Stopped);  // graceful: done stopped
    QCOMPARE(runs->engine(0)->stopRequests(), 1);
    QVERIFY(runs->run(0)->lastCheckpoint().endsWith(u".pt"_qs));
    // The run's checkpoint is what Predictions runs with (none was chosen there).
    QCOMPARE(window.predictionView()->checkpoint(),
             QDir(dir.path()).absoluteFilePath(runs->run(0)->lastCheckpoint()));
    QVERIFY(clock.elapsed() < MainWindow::kDefaultStopTimeoutMs);
    QVERIFY(!window.isStoppingToQuit());
    qunsetenv("FAKE_ENGINE_MODE");
    qunsetenv("MRCNN_ENGINE");
  }

  // An engine that ignores the graceful stop is killed once the stop timeout is over, and the
  // window still closes.
  void closingKillsAnEngineThatDoesNotStop() {
    QTemporaryDir dir;
    const QString engine = dir.filePath(u"stubborn-engine"_qs);
    {
      QFile script(engine);
      QVERIFY(script.open(QIODevice::WriteOnly));
      script.write(
          "#!/bin/sh\ntrap '' INT TERM\n"
          "echo '{\"v\":1,\"type\":\"start\",\"time\":1,\"task\":\"train\","
          "\"totalSteps\":100}'\n"
          "while :; do sleep 0.05; done\n");
      script.close();
      script.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    }
    qputenv("MRCNN_ENGINE", engine.toLocal8Bit());
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    RunsView* runs = window.runsView();
    runs->startRun(u"/specs/s.txt"_qs, u"train"_qs, dir.filePath(u"run"_qs));
    QTRY_COMPARE(runs->run(0)->status(), RunStatus::Running);
    window.setStopTimeout(300);
    window.setRunningEnginesQuestion(
        [](QWidget*, int) { return MainWindow::RunningEnginesAnswer::StopAndQuit; });
    QElapsedTimer clock;
    clock.start();
    QVERIFY(!window.close());
    QTRY_VERIFY_WITH_TIMEOUT(!window.isVisible(), 10000);
    QVERIFY2(clock.elapsed() >= 300, "closed before the stop timeout");
    QCOMPARE(runs->runningEngines(), 0);
    QCOMPARE(runs->engine(0)->stopRequests(), 2);  // SIGINT ignored, then killed
    QCOMPARE(runs->run(0)->status(), RunStatus::Crashed);
    QVERIFY(runs->run(0)->processExit()->signal);
    qunsetenv("MRCNN_ENGINE");
  }

  void aboutShowsRealVersions() {
    const QStringList local = localVersions();
    QVERIFY(local.join(u'\n').contains(QString::fromLatin1(qVersion())));
    const QString protobuf =
        QString::fromStdString(google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION));
    QVERIFY(local.join(u'\n').contains(u"protobuf "_qs + protobuf));

    // The engine's lines are passed on as it prints them.
    QTemporaryDir dir;
    const QString engine = dir.filePath(u"mrcnn-engine"_qs);
    {
      QFile script(engine);
      QVERIFY(script.open(QIODevice::WriteOnly));
      script.write(
          "#!/bin/sh\n[ \"$1\" = --version ] || exit 2\n"
          "echo 'mrcnn-engine 0.1.0'\necho 'LibTorch 2.14.1, CUDA not available'\n");
      script.close();
      script.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    }
    EngineVersionQuery query;
    QSignalSpy done(&query, &EngineVersionQuery::done);
    query.start(engine);
    QVERIFY(done.wait(10000));
    QCOMPARE(done[0][0].toStringList(),
             (QStringList{u"mrcnn-engine 0.1.0"_qs, u"LibTorch 2.14.1, CUDA not available"_qs}));
    QCOMPARE(done[0][1].toBool(), true);

    // A missing engine is said, with its path.
    EngineVersionQuery missing;
    QSignalSpy failed(&missing, &EngineVersionQuery::done);
    missing.start(dir.filePath(u"nothing"_qs));
    QCOMPARE(failed.size(), 1);
    QVERIFY(failed[0][0].toStringList().front().contains(dir.filePath(u"nothing"_qs)));
    QCOMPARE(failed[0][1].toBool(), false);
  }

 private:
  QTemporaryDir settings_dir_;
};

QTEST_MAIN(MainWindowTest)
#include "test_main_window.moc"

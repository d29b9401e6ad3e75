// The run monitor: event lines become series (values checked), bad lines become warnings and
// not crashes, a finished run reopens with the same series, a burst of events from
// tests/ui/run_monitor/fake_engine.sh causes a bounded number of redraws, CSV export holds the
// series, and the view renders a realistic run (kept as docs/screenshots/run_monitor.png when
// MRCNN_WRITE_SCREENSHOTS is set). Engines that crash, are killed or stop:
// test_engine_process.cpp.

#include <QDateTime>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextStream>
#include <QtTest>
#include <cmath>
#include <memory>
#include <random>

#include "specs/events.h"
#include "tests/ui/run_monitor/test_lines.h"
#include "ui/run_monitor/engine_process.h"
#include "ui/run_monitor/run_model.h"
#include "ui/run_monitor/run_plot.h"
#include "ui/run_monitor/runs_view.h"
#include "ui/run_monitor/series_csv.h"

using namespace mrcnn::ui;
namespace ev = mrcnn::events;
using mrcnn::testing::J;
using mrcnn::testing::readLines;
using mrcnn::testing::writeLines;

namespace {

QString line(const ev::Event& e) {
  return QString::fromStdString(ev::toJsonLine(e));
}

// A training run as the engine reports it: losses falling with noise, a warm-up then a step
// decay of the learning rate, throughput with jitter, evaluations every `eval_every` steps
// with AP rising towards `final_ap`.
QStringList realisticRun(int steps, unsigned seed, double final_ap, double base_lr = 0.01,
                         int eval_every = 50) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  QStringList lines;
  ev::Event start;
  start.set_type("start");
  start.set_time(1763776000);
  start.set_task("train");
  start.set_device("cpu");
  start.set_world_size(1);
  start.set_total_steps(static_cast<uint64_t>(steps));
  lines << line(start);
  ev::Event log;
  log.set_type("log");
  log.set_text("spec: specs/shapes_resnet18.txt (ResNet-18, 2 classes + background)");
  lines << line(log);
  double time = 1763776000;
  for (int s = 1; s <= steps; ++s) {
    const double t = static_cast<double>(s) / steps;
    const auto decay = [&](double start_value, double end_value, double rate, double jitter) {
      const double v = end_value + (start_value - end_value) * std::exp(-rate * t);
      return std::max(1e-4, v * (1 + jitter * noise(rng)));
    };
    ev::Event p;
    p.set_type("progress");
    time += 0.3 + 0.02 * noise(rng);
    p.set_time(time);
    p.set_step(static_cast<uint64_t>(s));
    p.set_epoch(static_cast<uint64_t>(s / 100));
    const double warm = std::min(1.0, s / 30.0);
    p.set_lr(base_lr * warm * (s > steps * 3 / 4 ? 0.1 : 1.0));
    auto* l = p.mutable_losses();
    l->set_rpn_objectness(decay(0.69, 0.05, 6, 0.12));
    l->set_rpn_box(decay(0.25, 0.04, 4, 0.15));
    l->set_fast_rcnn_class(decay(1.1, 0.12, 5, 0.10));
    l->set_fast_rcnn_box(decay(0.45, 0.10, 3, 0.12));
    l->set_mask(decay(0.69, 0.15, 4, 0.08));
    l->set_total(l->rpn_objectness() + l->rpn_box() + l->fast_rcnn_class() + l->fast_rcnn_box() +
                 l->mask());
    p.set_images_per_second(std::max(0.5, 3.2 + 0.25 * noise(rng)));
    p.set_data_wait_share(std::clamp(0.08 + 0.03 * noise(rng), 0.0, 1.0));
    p.mutable_memory()->set_rss_mib(2100 + 40 * t + 5 * noise(rng));
    p.set_eta_seconds((steps - s) * 0.3);
    lines << line(p);
    if (s % eval_every == 0) {
      ev::Event e;
      e.set_type("eval");
      e.set_time(time + 5);
      e.set_step(static_cast<uint64_t>(s));
      e.set_images(50);
      const double ap = final_ap * (1 - std::exp(-3.5 * t));
      for (auto* stats : {e.mutable_bbox(), e.mutable_segm()}) {
        const double k = stats == e.mutable_bbox() ? 1.0 : 0.9;
        for (double f : {1.0, 1.6, 1.05, 0.5, 1.0, 1.2, 0.45, 1.2, 1.25, 0.7, 1.2, 1.4})
          stats->add_stats(std::min(1.0, ap * k * f));
      }
      // The validation loss: the training loss's trend, a little above it late in the run.
      auto* v = e.mutable_val_losses();
      v->set_rpn_objectness(decay(0.69, 0.07, 6, 0));
      v->set_rpn_box(decay(0.25, 0.05, 4, 0));
      v->set_fast_rcnn_class(decay(1.1, 0.18, 5, 0));
      v->set_fast_rcnn_box(decay(0.45, 0.13, 3, 0));
      v->set_mask(decay(0.69, 0.19, 4, 0));
      v->set_total(v->rpn_objectness() + v->rpn_box() + v->fast_rcnn_class() + v->fast_rcnn_box() +
                   v->mask());
      lines << line(e);
      ev::Event c;
      c.set_type("checkpoint");
      c.set_time(time + 6);
      c.set_step(static_cast<uint64_t>(s));
      c.set_path(QStringLiteral("checkpoints/model.step-%1.pt").arg(s).toStdString());
      c.set_best(true);
      lines << line(c);
    }
  }
  ev::Event done;
  done.set_type("done");
  done.set_time(time + 10);
  done.set_status("ok");
  done.set_summary(QStringLiteral("%1 steps, segm AP %2")
                       .arg(steps)
                       .arg(final_ap * 0.9, 0, 'f', 3)
                       .toStdString());
  lines << line(done);
  return lines;
}

}  // namespace

class RunMonitorTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(QFileInfo(MRCNN_FAKE_ENGINE).isExecutable(), MRCNN_FAKE_ENGINE);
    qputenv("MRCNN_ENGINE", MRCNN_FAKE_ENGINE);
  }

  // Guards against events being dropped or misfiled: every field lands in its series.
  void eventLinesFillTheSeries() {
    RunModel m;
    QVERIFY(
        m.addLine(
             J("{'v':1,'type':'start','time':100,'task':'train','device':'cpu','totalSteps':40}"))
            .event);
    QCOMPARE(m.status(), RunStatus::Running);
    QCOMPARE(m.totalSteps(), 40.0);
    QVERIFY(
        m.addLine(J("{'v':1,'type':'progress','time':110,'step':10,'lr':0.02,"
                    "'losses':{'total':2.5,'rpnObjectness':0.6,'rpnBox':0.2,'fastRcnnClass':0.9,"
                    "'fastRcnnBox':0.3,'mask':0.5},'imagesPerSecond':3.5,'dataWaitShare':0.25,"
                    "'memory':{'rssMib':2048},'etaSeconds':30}\n"))
            .event);
    QVERIFY(m.addLine(J("{'v':1,'type':'progress','time':120,'step':20,'lr':0.01,'losses':{'total':"
                        "1.5,'mask':0.4},'imagesPerSecond':4}"))
                .event);
    QVERIFY(m.addLine(J("{'v':1,'type':'eval','time':121,'step':20,'bbox':{'stats':[0.31,0.52,0.3,"
                        "0.1,0.2,0.4,0.3,0.4,0.45,0.2,0.3,0.5]},'segm':{'stats':[0.28,0.49]},"
                        "'valLosses':{'total':1.75,'rpnObjectness':0.5,'mask':0.45}}"))
                .event);
    QVERIFY(m.addLine(J("{'v':1,'type':'checkpoint','time':122,'step':20,'path':'checkpoints/"
                        "model.step-20.pt','best':true}"))
                .event);

    const Series* total = m.series("loss_total");
    QVERIFY(total);
    QCOMPARE(total->steps, (QVector<double>{10, 20}));
    QCOMPARE(total->values, (QVector<double>{2.5, 1.5}));
    QCOMPARE(m.series("loss_rpn_objectness")->values, (QVector<double>{0.6, 0}));
    QCOMPARE(m.series("loss_fast_rcnn_class")->values.first(), 0.9);
    QCOMPARE(m.series("loss_mask")->values, (QVector<double>{0.5, 0.4}));
    QCOMPARE(m.series("lr")->values, (QVector<double>{0.02, 0.01}));
    QCOMPARE(m.series("images_per_second")->values, (QVector<double>{3.5, 4}));
    QCOMPARE(m.series("data_wait_share")->values, (QVector<double>{0.25, 0}));
    QCOMPARE(m.series("memory_rss_mib")->values, (QVector<double>{2048}));
    QCOMPARE(m.series("bbox_AP")->steps, (QVector<double>{20}));
    QCOMPARE(m.series("bbox_AP")->values, (QVector<double>{0.31}));
    QCOMPARE(m.series("bbox_ARl")->values, (QVector<double>{0.5}));
    QCOMPARE(m.series("segm_AP50")->values, (QVector<double>{0.49}));
    QVERIFY(!m.series("segm_AP75"));  // not sent, not invented
    QCOMPARE(m.series("val_loss_total")->steps, (QVector<double>{20}));
    QCOMPARE(m.series("val_loss_total")->values, (QVector<double>{1.75}));
    QCOMPARE(m.series("val_loss_rpn_objectness")->values, (QVector<double>{0.5}));
    QCOMPARE(m.series("val_loss_rpn_box")->values, (QVector<double>{0}));
    QCOMPARE(m.series("val_loss_mask")->values, (QVector<double>{0.45}));
    QCOMPARE(m.step(), 20.0);
    QCOMPARE(m.progress(), 0.5);
    // No ETA in the last event: estimated from the rate, (40 - 20) steps at 1 s a step.
    QCOMPARE(m.etaSeconds(), 20.0);
    QCOMPARE(m.bestCheckpoint(), QString("checkpoints/model.step-20.pt"));

    QVERIFY(
        m.addLine(J("{'v':1,'type':'done','time':130,'status':'ok','summary':'20 steps'}")).event);
    QCOMPARE(m.status(), RunStatus::Ok);
    QCOMPARE(m.summary(), QString("20 steps"));
    QVERIFY(m.log().join('\n').contains("eval at step 20: bbox AP 0.3100"));
  }

  // A weights download (checkpoint "torchvision:NAME") shows in the status line while it runs
  // and leaves one line in the log; the task's own progress then takes the line back.
  void aWeightsDownloadShowsInTheStatusLine() {
    RunModel m;
    m.addLine(J("{'v':1,'type':'start','time':100,'task':'train','device':'cpu','totalSteps':40}"));
    m.addLine(J("{'v':1,'type':'download','time':101,'download':{'name':'torchvision:resnet50',"
                "'bytes':25000000,'totalBytes':100000000,'bytesPerSecond':5000000,"
                "'etaSeconds':15}}"));
    QCOMPARE(m.statusLine(), QString("Downloading torchvision:resnet50: 25.0 MB of 100.0 MB, "
                                     "5.0 MB/s, 15 s left"));
    QVERIFY(!m.series("loss_total"));  // not a training step
    QCOMPARE(m.step(), 0.0);
    m.addLine(J("{'v':1,'type':'download','time':116,'download':{'name':'torchvision:resnet50',"
                "'bytes':100000000,'totalBytes':100000000,'bytesPerSecond':5000000,"
                "'done':true}}"));
    QCOMPARE(m.statusLine(), QString("Running train on cpu"));
    QVERIFY(m.log().contains("Downloading torchvision:resnet50: 100.0 MB, 5.0 MB/s, done"));
    m.addLine(J("{'v':1,'type':'download','time':117,'download':{'name':'torchvision:x',"
                "'bytes':1000}}"));
    QVERIFY(m.statusLine().startsWith("Downloading torchvision:x: 1.0 kB"));
    m.addLine(J("{'v':1,'type':'progress','time':120,'step':1,'losses':{'total':1}}"));
    QCOMPARE(m.statusLine(), QString("Running train on cpu"));
  }

  // A job of a SLURM host waiting in the queue: the launcher's notices of its state are the
  // status line until the engine starts; then the run's own.
  void aQueuedJobShowsItsStateInTheStatusLine() {
    RunModel m;
    m.setLaunching();
    QCOMPARE(m.statusLine(), QString("Starting the engine…"));
    m.appendStderr("mrcnn-workbench: submitted to cluster as job 4242; following it");
    m.appendStderr("mrcnn-workbench: job 4242 on cluster: PENDING (Resources)");
    QCOMPARE(m.statusLine(), QString("Job 4242 on cluster: PENDING (Resources)"));
    m.appendStderr("mrcnn-workbench: job 4242 on cluster: RUNNING");
    QCOMPARE(m.statusLine(), QString("Job 4242 on cluster: RUNNING"));
    m.addLine(J("{'v':1,'type':'start','time':100,'task':'train','device':'cuda','totalSteps':40}"));
    QCOMPARE(m.statusLine(), QString("Running train on cuda"));
  }

  // Guards against a torn or foreign line taking the monitor down or corrupting a run.
  void garbageLinesGiveWarnings() {
    RunModel m;
    m.addLine(J("{'v':1,'type':'progress','step':5,'losses':{'total':1}}"));
    const QStringList garbage = {
        "not json at all",
        "{",
        J("{'v':1,'type':'progress','step':6,'losses':{'tot"),  // torn by a kill
        "{}",                                                   // no type
        "[1, 2, 3]",
        J("{'v':1,'type':'progress','step':'many'}"),
        J("{'v':1,'type':'progress','step':-3}"),
        J("{'type': 17}"),
        QString::fromLatin1("\x01\x02\xff\xfe garbage"),
        QString(100000, QLatin1Char('{')),
        "Traceback (most recent call last):",
    };
    for (const QString& g : garbage) {
      const LineResult r = m.addLine(g);
      QVERIFY2(!r.event, qPrintable(g.left(40)));
      QVERIFY2(!r.warning.isEmpty(), qPrintable(g.left(40)));
    }
    QCOMPARE(m.warningCount(), garbage.size());
    QCOMPARE(m.series("loss_total")->steps, (QVector<double>{5}));
    QVERIFY(m.addLine("   ").warning.isEmpty());  // blank lines are not an error
    // A newer engine's event: read, with a note, and its unknown fields ignored.
    const LineResult newer =
        m.addLine(J("{'v':2,'type':'progress','step':7,'losses':{'total':0.5},'newField':[1]}"));
    QVERIFY(newer.event);
    QVERIFY(newer.warning.contains("protocol version 2"));
    QCOMPARE(m.series("loss_total")->values.last(), 0.5);
  }

  // Guards the resume case: a run resumed from an earlier checkpoint repeats steps; the old
  // points after the checkpoint go and the curve stays a function of step.
  void resumedRunReplacesRepeatedSteps() {
    RunModel m;
    m.addLine(J("{'type':'start','totalSteps':10}"));
    for (int s = 1; s <= 8; ++s)
      m.addLine(J("{'type':'progress','step':%1,'losses':{'total':%2}}").arg(s).arg(10 - s));
    m.addLine(J("{'type':'checkpoint','step':9,'path':'checkpoints/model.step-9.pt'}"));
    QCOMPARE(m.step(), 9.0);  // the stop's checkpoint after the last progress event
    m.addLine(J("{'type':'done','status':'stopped'}"));
    QCOMPARE(m.status(), RunStatus::Stopped);
    m.addLine(J("{'type':'start','task':'train','totalSteps':10,'startStep':5,"
                "'specChanges':[{'field':'init_learning_rate','before':'0.02','after':'0.01'}]}"));
    QCOMPARE(m.status(), RunStatus::Running);
    QCOMPARE(m.log().last(), QString("  changed: init_learning_rate: 0.02 -> 0.01"));
    QCOMPARE(m.series("loss_total")->steps, (QVector<double>{1, 2, 3, 4, 5}));
    m.addLine(J("{'type':'progress','step':6,'losses':{'total':0.25}}"));
    QCOMPARE(m.series("loss_total")->steps, (QVector<double>{1, 2, 3, 4, 5, 6}));
    QCOMPARE(m.series("loss_total")->values.last(), 0.25);
    // Without a start event, a step going back still truncates.
    m.addLine(J("{'type':'progress','step':3,'losses':{'total':7.5}}"));
    QCOMPARE(m.series("loss_total")->steps, (QVector<double>{1, 2, 3}));
    QCOMPARE(m.series("loss_total")->values.last(), 7.5);
    // An evaluation started on the same directory does not cut the training curves.
    m.addLine(J("{'type':'start','task':'evaluate','totalSteps':50}"));
    QCOMPARE(m.series("loss_total")->size(), 3);
    // Nor does an inference, whose progress steps count images: nothing of it is plotted.
    m.addLine(J("{'type':'start','task':'inference','totalSteps':4}"));
    m.addLine(J("{'type':'progress','step':2,'imagesPerSecond':3.5,'memory':{'rssMib':900}}"));
    QCOMPARE(m.series("loss_total")->steps, (QVector<double>{1, 2, 3}));
    QVERIFY(m.series("images_per_second") == nullptr);
    QVERIFY(m.series("memory_rss_mib") == nullptr);
  }

  // Guards reopening: the file gives back exactly the series the live run had.
  void finishedRunReopensWithTheSameSeries() {
    const QStringList lines = realisticRun(300, 7, 0.42);
    RunModel live;
    for (const QString& l : lines)
      QVERIFY(live.addLine(l).event);
    QTemporaryDir dir;
    QStringList on_disk = lines;
    on_disk.insert(40, "{\"v\":1,\"type\":\"progr");  // a torn line in the middle
    writeLines(dir.filePath("events.jsonl"), on_disk);

    QString error;
    auto loaded = RunModel::loadFile(dir.path(), &error);
    QVERIFY2(loaded, qPrintable(error));
    QCOMPARE(loaded->warnings.size(), 1);
    QVERIFY2(loaded->warnings.first().startsWith("events.jsonl:41: "),
             qPrintable(loaded->warnings.first()));
    const RunModel& m = loaded->model;
    QCOMPARE(m.status(), RunStatus::Ok);
    QCOMPARE(m.allSeries().keys().size(), live.allSeries().keys().size());
    for (auto it = live.allSeries().begin(); it != live.allSeries().end(); ++it) {
      const Series* s = m.series(it.key());
      QVERIFY2(s, qPrintable(it.key()));
      QCOMPARE(s->steps, it.value().steps);
      QCOMPARE(s->values, it.value().values);
    }
    QCOMPARE(m.series("loss_total")->size(), 300);
    QCOMPARE(m.series("segm_AP")->size(), 6);

    QVERIFY(!RunModel::loadFile(dir.filePath("missing"), &error));
    QVERIFY2(error.startsWith(dir.filePath("missing/events.jsonl") + ": cannot read: "), qPrintable(error));

    // Events that end without done: the run was cut short.
    QStringList cut = lines.mid(0, 100);
    writeLines(dir.filePath("events.jsonl"), cut);
    auto cut_run = RunModel::loadFile(dir.path());
    QVERIFY(cut_run);
    QCOMPARE(cut_run->model.status(), RunStatus::Crashed);
    QVERIFY(cut_run->model.lastError().contains("without a done event"));
  }

  void emaSmoothing() {
    QCOMPARE(smoothEma({1, 2, 3}, 0), (QVector<double>{1, 2, 3}));
    const QVector<double> c = smoothEma({4, 4, 4, 4}, 0.9);
    for (double v : c)
      QVERIFY(std::abs(v - 4) < 1e-12);  // bias-corrected: a constant stays constant
    const QVector<double> s = smoothEma({1, 2}, 0.5);
    QVERIFY(std::abs(s[0] - 1.0) < 1e-12);
    QVERIFY(std::abs(s[1] - 1.25 / 0.75) < 1e-12);
  }

  void csvExportContainsTheSeries() {
    RunModel a, b;
    a.addLine(J("{'type':'progress','step':1,'lr':0.01,'losses':{'total':2.5,'mask':0.5}}"));
    a.addLine(J("{'type':'progress','step':2,'lr':0.01,'losses':{'total':2.25,'mask':0.4}}"));
    a.addLine(J("{'type':'eval','step':2,'bbox':{'stats':[0.125]}}"));
    b.addLine(J("{'type':'progress','step':1,'losses':{'total':3}}"));
    QString text;
    QTextStream out(&text);
    writeSeriesCsv({{"run a", &a}, {"b,2", &b}}, out);
    out.flush();
    const QStringList rows = text.split('\n', Qt::SkipEmptyParts);
    QCOMPARE(rows.size(), 4);
    const QStringList header = rows[0].split(',');
    QCOMPARE(header.mid(0, 3), (QStringList{"run", "step", "loss_total"}));
    QVERIFY(header.contains("lr"));
    QVERIFY(header.contains("bbox_AP"));
    QVERIFY(!header.contains("segm_AP"));
    const int total = header.indexOf("loss_total"), ap = header.indexOf("bbox_AP"),
              lr = header.indexOf("lr");
    QCOMPARE(rows[1].split(',')[total], QString("2.5"));
    QCOMPARE(rows[1].split(',')[ap], QString(""));
    QCOMPARE(rows[2].split(',')[0], QString("run a"));
    QCOMPARE(rows[2].split(',')[1], QString("2"));
    QCOMPARE(rows[2].split(',')[total], QString("2.25"));
    QCOMPARE(rows[2].split(',')[ap], QString("0.125"));
    QCOMPARE(rows[2].split(',')[lr], QString("0.01"));
    QVERIFY(rows[3].startsWith("\"b,2\",1,3"));
  }

  // A fast engine must not drive the repaint rate: 10,000 events in a burst give a handful of
  // redraws, bounded by the timer interval, never one per event.
  void burstOfEventsGivesBoundedReplots() {
    QTemporaryDir dir;
    qputenv("FAKE_ENGINE_MODE", "burst");
    qputenv("FAKE_ENGINE_LINES", "10000");
    RunsView view;
    view.show();
    const int before = view.replotCount();
    QElapsedTimer clock;
    clock.start();
    QSignalSpy finished(&view, &RunsView::runFinished);
    view.startRun("spec.txt", "train", dir.path());
    // The engine only starts when the event loop runs: nothing is missed by spying now.
    QSignalSpy chunks(view.engine(0), &EngineProcess::modelChanged);
    QVERIFY(finished.wait(20000));
    QTRY_COMPARE(view.run(0)->status(), RunStatus::Ok);
    QTest::qWait(3 * RunsView::kRefreshIntervalMs);
    const qint64 elapsed = clock.elapsed();
    const int replots = view.replotCount() - before;
    QCOMPARE(view.run(0)->series("loss_total")->size(), 10000);
    qInfo("10,000 events in %lld ms, %d reads: %d replots", elapsed, int(chunks.count()), replots);
    QVERIFY(replots >= 1);
    QVERIFY2(replots <= elapsed / RunsView::kRefreshIntervalMs + 3,
             qPrintable(QStringLiteral("%1 replots in %2 ms").arg(replots).arg(elapsed)));
    QVERIFY(replots < 200);
    QCOMPARE(view.plot("loss_total")->drawnPoints(0, 0).size(), 10000);

    // Deterministic: 10,000 chunks fed without the event loop running → exactly one redraw.
    const int before_feed = view.replotCount();
    EngineProcess* p = view.engine(0);
    for (int s = 10001; s <= 20000; ++s)
      p->feedStdout(QStringLiteral("{\"type\":\"progress\",\"step\":%1,\"losses\":{\"total\":1}}\n")
                        .arg(s)
                        .toUtf8());
    QCOMPARE(view.replotCount(), before_feed);
    QTRY_COMPARE(view.replotCount(), before_feed + 1);
    QTest::qWait(3 * RunsView::kRefreshIntervalMs);
    QCOMPARE(view.replotCount(), before_feed + 1);
    QCOMPARE(view.plot("loss_total")->drawnPoints(0, 0).size(), 20000);
    qunsetenv("FAKE_ENGINE_LINES");
  }

  // The plots draw what the model holds; several runs selected are overlaid.
  void plotsShowAndOverlayRuns() {
    QTemporaryDir a, b;
    writeLines(a.filePath("events.jsonl"), realisticRun(200, 1, 0.4));
    writeLines(b.filePath("events.jsonl"), realisticRun(120, 2, 0.3, 0.02));
    RunsView view;
    view.resize(1400, 900);
    view.show();
    QSignalSpy opened(&view, &RunsView::runOpened);
    view.openRun(a.path());
    view.openRun(b.path());
    QCOMPARE(opened.count(), 2);
    QCOMPARE(view.runCount(), 2);
    QCOMPARE(view.run(0)->status(), RunStatus::Ok);
    view.setSmoothing(0);
    view.selectRows({0});
    view.refreshNow();
    const Series* total = view.run(0)->series("loss_total");
    const QVector<QPointF> drawn = view.plot("loss_total")->drawnPoints(0, 0);
    QCOMPARE(drawn.size(), total->size());
    for (int i = 0; i < drawn.size(); i += 37) {
      QCOMPARE(drawn[i].x(), total->steps[i]);
      QCOMPARE(drawn[i].y(), total->values[i]);
    }
    QCOMPARE(view.plot("bbox_AP")->drawnPoints(0, 1).size(), 4);  // AP50, dashed
    // The validation loss beside the training loss: one point per evaluation, dashed.
    const Series* val_total = view.run(0)->series("val_loss_total");
    QCOMPARE(view.plot("loss_total")->drawnPoints(0, 1).size(), 4);
    QCOMPARE(view.plot("loss_total")->drawnPoints(0, 1).first().y(), val_total->values.first());
    // Smoothing changes the drawn curve, not the data; the per-evaluation curve stays as it is.
    view.setSmoothing(0.9);
    view.refreshNow();
    QCOMPARE(view.plot("loss_total")->drawnPoints(0, 1).last().y(), val_total->values.last());
    QVERIFY2(view.plot("loss_total")->readoutAt(val_total->steps.first()).contains("validation: "),
             qPrintable(view.plot("loss_total")->readoutAt(val_total->steps.first())));
    const QVector<QPointF> smooth = view.plot("loss_total")->drawnPoints(0, 0);
    QCOMPARE(smooth.size(), total->size());
    QVERIFY(std::abs(smooth[100].y() - total->values[100]) > 1e-9);
    QCOMPARE(smooth[100].y(), smoothEma(total->values, 0.9)[100]);

    view.selectRows({0, 1});
    view.refreshNow();
    QCOMPARE(view.plot("loss_total")->drawnPoints(1, 0).size(), 120);
    const QString readout = view.plot("loss_total")->readoutAt(100);
    QVERIFY2(readout.contains(QFileInfo(a.path()).fileName()) &&
                 readout.contains(QFileInfo(b.path()).fileName()),
             qPrintable(readout));
    QVERIFY(readout.startsWith("step 100"));

    // Zoom with the wheel: the range holds while data keeps coming; Fit goes back.
    RunPlot* loss = view.plot("loss_total");
    const QCPRange fitted = loss->xAxis->range();
    const QPointF centre = loss->axisRect()->rect().center();
    QWheelEvent wheel(centre, loss->mapToGlobal(centre), QPoint(), QPoint(0, 240), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(loss, &wheel);
    const QCPRange zoomed = loss->xAxis->range();
    QVERIFY2(zoomed.size() < fitted.size() * 0.9, qPrintable(QString::number(zoomed.size())));
    view.refreshNow();
    QCOMPARE(loss->xAxis->range().size(), zoomed.size());
    loss->resetView();
    QCOMPARE(loss->xAxis->range().lower, fitted.lower);
    QCOMPARE(loss->xAxis->range().upper, fitted.upper);

    view.setLogScale(true);
    QCOMPARE(view.plot("loss_total")->yAxis->scaleType(), QCPAxis::stLogarithmic);
    QCOMPARE(view.plot("bbox_AP")->yAxis->scaleType(), QCPAxis::stLinear);

    QTemporaryDir out;
    QString error;
    QVERIFY2(view.exportCsv(out.filePath("runs.csv"), &error), qPrintable(error));
    const QStringList rows = readLines(out.filePath("runs.csv"));
    QCOMPARE(rows.size(), 1 + 200 + 120);
    QVERIFY2(view.exportPng(out.filePath("runs.png"), &error), qPrintable(error));
    QImage png(out.filePath("runs.png"));
    QVERIFY(!png.isNull());
    QVERIFY(png.width() >= 600);
  }

  // A directory without events: listed with the reason, not a crash or a silent no-op.
  // A run whose events end without done and whose file is fresh runs elsewhere (headless in a
  // terminal): it is followed, its new lines plotted, until it says done; an old one that
  // ends that way was cut short.
  void runningElsewhereIsFollowed() {
    QTemporaryDir dir;
    const QString events = dir.filePath("events.jsonl");
    const QStringList lines = realisticRun(20, 7, 0.3, 0.01, 10);
    const int half = 12;  // start, log and ten progress events
    writeLines(events, lines.mid(0, half));
    {  // half a line more: the engine is writing it
      QFile f(events);
      QVERIFY(f.open(QIODevice::Append));
      f.write(lines[half].left(20).toUtf8());
    }
    RunsView view;
    view.openRun(dir.path());
    const RunModel* m = view.run(0);
    QCOMPARE(m->status(), RunStatus::Running);
    QVERIFY(m->isFollowed());
    QVERIFY2(view.statusText().contains("following"), qPrintable(view.statusText()));
    QVERIFY(!view.resumeEnabled() && !view.stopEnabled());  // not this window's engine
    const int before = m->series("loss_total")->size();
    QCOMPARE(before, half - 2);
    {  // the rest of that line and the rest of the run
      QFile f(events);
      QVERIFY(f.open(QIODevice::Append));
      f.write(lines[half].mid(20).toUtf8() + '\n');
      for (int i = half + 1; i < lines.size(); ++i)
        f.write((lines[i] + '\n').toUtf8());
    }
    QTRY_COMPARE_WITH_TIMEOUT(m->status(), RunStatus::Ok, 5000);
    QCOMPARE(m->series("loss_total")->size(), 20);
    QVERIFY(m->series("bbox_AP") && m->series("bbox_AP")->size() == 2);
    QCOMPARE(m->warningCount(), 0);  // the line written in two pieces was read whole

    // The same events, last changed long ago: cut short, not followed.
    QTemporaryDir old;
    writeLines(old.filePath("events.jsonl"), lines.mid(0, half));
    {
      QFile f(old.filePath("events.jsonl"));
      QVERIFY(f.open(QIODevice::ReadWrite));
      QVERIFY(
          f.setFileTime(QDateTime::currentDateTime().addSecs(-2 * RunsView::kFollowRecentSeconds),
                        QFileDevice::FileModificationTime));
    }
    view.openRun(old.path());
    QCOMPARE(view.run(1)->status(), RunStatus::Crashed);
    QVERIFY(!view.run(1)->isFollowed());
  }

  // The run directory of a followed run is deleted: the run says what happened, what was read
  // stays plotted, and the view goes on with other runs.
  void runDirectoryDeletedWhileFollowed() {
    auto dir = std::make_unique<QTemporaryDir>();
    const QStringList lines = realisticRun(20, 7, 0.3, 0.01, 10);
    writeLines(dir->filePath("events.jsonl"), lines.mid(0, 12));
    RunsView view;
    view.openRun(dir->path());
    const RunModel* m = view.run(0);
    QVERIFY(m->isFollowed());
    const int read = m->series("loss_total")->size();
    const QString events = dir->filePath("events.jsonl");
    dir.reset();  // the whole run directory goes
    QTRY_COMPARE_WITH_TIMEOUT(m->status(), RunStatus::Unreadable, 5000);
    QVERIFY2(m->statusLine().contains("Stopped following " + events + ": it was deleted"),
             qPrintable(m->statusLine()));
    QCOMPARE(m->series("loss_total")->size(), read);
    QTemporaryDir other;
    writeLines(other.filePath("events.jsonl"), lines);
    view.openRun(other.path());
    QCOMPARE(view.run(1)->status(), RunStatus::Ok);
  }

  void openingAMissingRunSaysWhy() {
    QTemporaryDir dir;
    RunsView view;
    view.openRun(dir.filePath("nowhere"));
    QCOMPARE(view.runCount(), 1);
    QVERIFY2(view.statusText().contains("nowhere/events.jsonl: cannot read"),
             qPrintable(view.statusText()));
    QCOMPARE(view.runningEngines(), 0);
  }

  // A realistic view, rendered offscreen; kept for the README when asked.
  void screenshot() {
    QTemporaryDir root;
    const QString a = root.filePath("shapes_resnet18"), b = root.filePath("shapes_resnet18_lr0.02");
    QDir().mkpath(a);
    QDir().mkpath(b);
    writeLines(QDir(a).filePath("events.jsonl"), realisticRun(400, 11, 0.46));
    // The second run, a higher learning rate, stopped at step 300 (Resume would continue it).
    QStringList second = realisticRun(400, 12, 0.38, 0.02);
    int cut = 0;
    while (!second[cut].contains("\"step\":\"300\"") || !second[cut].contains("checkpoint"))
      ++cut;
    second = second.mid(0, cut + 1);
    ev::Event stopped;
    stopped.set_type("done");
    stopped.set_status("stopped");
    stopped.set_summary("stopped at step 300");
    second << line(stopped);
    writeLines(QDir(b).filePath("events.jsonl"), second);
    RunsView view;
    view.resize(1500, 980);
    view.show();
    view.openRun(a);
    view.openRun(b);
    view.selectRows({1, 0});
    view.refreshNow();
    QCOMPARE(view.run(1)->status(), RunStatus::Stopped);
    QVERIFY(view.resumeEnabled());
    // Hover over the total loss at about step 250: the read-out names both runs.
    RunPlot* loss = view.plot("loss_total");
    const QPoint at(static_cast<int>(loss->xAxis->coordToPixel(250)),
                    loss->axisRect()->rect().center().y());
    QMouseEvent move(QEvent::MouseMove, at, loss->mapToGlobal(at), Qt::NoButton, Qt::NoButton,
                     Qt::NoModifier);
    QApplication::sendEvent(loss, &move);
    QTest::qWait(100);
    const QImage image = view.grab().toImage();
    QVERIFY(!image.isNull());
    QCOMPARE(image.size(), QSize(1500, 980));
    const QString out_dir = qEnvironmentVariable("MRCNN_WRITE_SCREENSHOTS");
    const QString path = out_dir.isEmpty() ? root.filePath("run_monitor.png")
                                           : QDir(out_dir).filePath("run_monitor.png");
    QVERIFY(image.save(path));
    if (!out_dir.isEmpty()) qInfo("screenshot: %s", qPrintable(path));

    // Dark mode: the plots take their colours from the palette, not black on white.
    QPalette dark;
    dark.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2b));
    dark.setColor(QPalette::WindowText, QColor(0xe0, 0xe0, 0xe0));
    dark.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
    dark.setColor(QPalette::Text, QColor(0xe0, 0xe0, 0xe0));
    dark.setColor(QPalette::Button, QColor(0x35, 0x35, 0x35));
    dark.setColor(QPalette::ButtonText, QColor(0xe0, 0xe0, 0xe0));
    view.setPalette(dark);
    view.refreshNow();
    QTest::qWait(100);
    const QImage plot = view.plot("loss_total")->grab().toImage();
    QCOMPARE(QColor(plot.pixel(3, plot.height() / 2)), dark.color(QPalette::Base));
    const QImage dark_image = view.grab().toImage();
    QVERIFY(dark_image.save(out_dir.isEmpty() ? root.filePath("run_monitor_dark.png")
                                              : QDir(out_dir).filePath("run_monitor_dark.png")));
  }
};

QTEST_MAIN(RunMonitorTest)
#include "test_run_monitor.moc"

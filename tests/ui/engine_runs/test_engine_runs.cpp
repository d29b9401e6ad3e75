// The run monitor and the prediction view driven by the real mrcnn-engine (not a stand-in):
// a tiny shapes training run started from the Runs view plots live progress, stops gracefully
// on Stop with a checkpoint, resumes on Resume from that step to the end without repeating a
// step; the Predictions view runs inference with the run's checkpoint on a shapes image and
// shows its detections, filtered by the score slider; the finished run reopened from its
// events.jsonl has the same series; Prune… on the run (TAO's parameters in the dialog) prunes
// it through the engine, the result dialog shows the ratio and the per-layer table, and
// Retrain… writes a spec that trains the pruned model, which the view then runs; Export… on
// the run (int8 in the dialog) exports it through the engine, the result dialog shows the
// report with every layer's decision, and Run in Predictions runs the int8 model there with
// OpenVINO. The test functions run in order and share the one run.
// Skipped when the engine is not built (MRCNN_BIN_DIR/mrcnn-engine).
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <memory>

#include "ui/common/image_view.h"
#include "ui/dataset_browser/dataset_browser.h"
#include "ui/dataset_browser/image_list_model.h"
#include "ui/export/export_dialog.h"
#include "ui/export/export_flow.h"
#include "ui/export/export_result.h"
#include "ui/label_review/label_review.h"
#include "ui/predictions/prediction_view.h"
#include "ui/prune/prune_dialog.h"
#include "ui/prune/prune_flow.h"
#include "ui/prune/prune_result.h"
#include "ui/run_monitor/engine_process.h"
#include "ui/run_monitor/run_model.h"
#include "ui/run_monitor/run_plot.h"
#include "ui/run_monitor/runs_view.h"

using namespace mrcnn::ui;

namespace {

constexpr int kTotalSteps = 6;
constexpr int kStepTimeoutMs = 120000;  // a step, an evaluation or a start on a busy 2-core CPU

QPushButton* button(QWidget* parent, const QString& text) {
  for (QPushButton* b : parent->findChildren<QPushButton*>())
    if (b->text() == text) return b;
  return nullptr;
}

// Steps strictly increasing: a resumed run that repeated a step would break it.
bool strictlyIncreasing(const Series& s) {
  for (int i = 1; i < s.size(); ++i)
    if (!(s.steps[i] > s.steps[i - 1])) return false;
  return true;
}

QString describe(const Series& s) {
  QStringList steps;
  for (double v : s.steps)
    steps << QString::number(v);
  return steps.join(' ');
}

}  // namespace

class EngineRunsTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString engine_;
  QString run_dir_;
  // The live run's series at the end, for the reopened one to match.
  QHash<QString, Series> live_series_;
  QString checkpoint_;
  std::unique_ptr<RunsView> view_;

  QStringList overrides() const {
    return {
        "device=cpu",
        "output_dir=" + dir_.filePath("runs"),
        "data_config.shapes_dataset.root=" + dir_.filePath("shapes"),
        "data_config.shapes_dataset.train_images=8",
        "data_config.shapes_dataset.val_images=2",
        "data_config.shapes_dataset.min_side=96",
        "data_config.shapes_dataset.max_side=128",
        "data_config.image_size=(128, 128)",
        "data_config.n_workers=1",
        "maskrcnn_config.nlayers=10",
        "train_batch_size=2",
        "eval_batch_size=2",
        QStringLiteral("total_steps=%1").arg(kTotalSteps),
        "warmup_steps=2",
        // At the spec's 0.02 a 2-step warm-up at batch 2 diverges (loss 75 at step 5).
        "init_learning_rate=0.005",
        "learning_rate_steps=[4, 5]",
        "report_frequency=1",
        "logging_frequency=1",
        "save_checkpoints_steps=2",
        "num_steps_per_eval=3",
        // A six-step model scores every object far below the default 0.05 (1e-7 is typical);
        // keep all its detections so that the view has real ones to draw and filter.
        "maskrcnn_config.test_score_thresh=0",
    };
  }

 private slots:
  void initTestCase() {
    const QString bin = qEnvironmentVariable("MRCNN_BIN_DIR");
    engine_ = QDir(bin).filePath("mrcnn-engine");
    // The test target depends on the engine: missing, the build is broken, not the machine.
    QVERIFY2(!bin.isEmpty() && QFileInfo(engine_).isExecutable(),
             "mrcnn-engine is not built (MRCNN_BIN_DIR/mrcnn-engine)");
    QVERIFY2(!qEnvironmentVariable("MRCNN_SOURCE_DIR").isEmpty(), "MRCNN_SOURCE_DIR is not set (ctest sets it)");
    QVERIFY(dir_.isValid());
    qputenv("MRCNN_ENGINE", engine_.toUtf8());
    run_dir_ = dir_.filePath("runs/tiny");
  }

  // Start, live plots, Stop (graceful: stopped with a checkpoint), Resume to the end.
  void trainStopResume() {
    QElapsedTimer clock;
    clock.start();
    view_ = std::make_unique<RunsView>();
    view_->resize(1200, 800);
    view_->show();
    QSignalSpy finished(view_.get(), &RunsView::runFinished);
    const QString spec = qEnvironmentVariable("MRCNN_SOURCE_DIR") + "/specs/shapes_resnet18.txt";
    view_->startRun(spec, "train", run_dir_, overrides());
    QCOMPARE(view_->runCount(), 1);
    const RunModel* m = view_->run(0);
    // The command line carries the overrides.
    QVERIFY2(view_->logText().contains("--set total_steps=6"), qPrintable(view_->logText()));

    // Live progress reaches the plots: the series grows and the plot holds its points.
    QTRY_VERIFY_WITH_TIMEOUT(m->series("loss_total") && m->series("loss_total")->size() >= 1,
                             kStepTimeoutMs);
    QCOMPARE(m->status(), RunStatus::Running);
    QCOMPARE(m->task(), QString("train"));
    QCOMPARE(m->totalSteps(), double(kTotalSteps));
    view_->refreshNow();
    RunPlot* loss_plot = view_->plot("loss_total");
    QVERIFY(loss_plot);
    QVERIFY2(loss_plot->drawnPoints(0, 0).size() >= 1, "the total loss plot has no points");
    QVERIFY(view_->progressText().contains(QStringLiteral("/ %1").arg(kTotalSteps)));
    QVERIFY(view_->stopEnabled());
    QCOMPARE(view_->runningEngines(), 1);
    const double first_seen = m->step();
    QTRY_VERIFY_WITH_TIMEOUT(m->step() > first_seen, kStepTimeoutMs);  // it advances

    // Stop: the engine finishes its step, writes a checkpoint and says done stopped.
    QVERIFY(m->step() < kTotalSteps);
    QPushButton* stop = button(view_.get(), "Stop");
    QVERIFY(stop && stop->isEnabled());
    QTest::mouseClick(stop, Qt::LeftButton);
    QVERIFY(m->status() == RunStatus::Stopping || isFinished(m->status()));
    QVERIFY(finished.count() > 0 || finished.wait(kStepTimeoutMs));
    view_->refreshNow();
    QVERIFY2(
        m->status() == RunStatus::Stopped,
        qPrintable(statusName(m->status()) + ": " + m->statusLine() + "\n" + view_->logText()));
    QCOMPARE(view_->engine(0)->stopRequests(), 1);  // one SIGINT was enough
    QVERIFY(m->processExit().has_value());
    QCOMPARE(m->processExit()->exit_code, 0);
    const double stopped_at = m->step();
    QVERIFY2(stopped_at < kTotalSteps, "the run ended before Stop took effect");
    QVERIFY2(!m->lastCheckpoint().isEmpty(), qPrintable(view_->logText()));
    QCOMPARE(m->lastCheckpointStep(), stopped_at);
    QVERIFY2(QFile::exists(QDir(run_dir_).absoluteFilePath(m->lastCheckpoint())),
             qPrintable(m->lastCheckpoint()));
    QVERIFY2(view_->detailsText().contains(QFileInfo(m->lastCheckpoint()).fileName()),
             qPrintable(view_->detailsText()));
    QVERIFY2(view_->statusText().startsWith("Stopped at step"), qPrintable(view_->statusText()));
    const Series before = *m->series("loss_total");
    QVERIFY(strictlyIncreasing(before));
    QCOMPARE(before.steps.last(), stopped_at);

    // Resume: from the checkpoint's step to the end, done ok.
    QVERIFY(view_->resumeEnabled());
    QPushButton* resume = button(view_.get(), "Resume");
    QVERIFY(resume && resume->isEnabled());
    finished.clear();
    QTest::mouseClick(resume, Qt::LeftButton);
    QCOMPARE(view_->runningEngines(), 1);
    QVERIFY(finished.wait(4 * kStepTimeoutMs));
    view_->refreshNow();
    QVERIFY2(m->status() == RunStatus::Ok, qPrintable(statusName(m->status()) + ": " +
                                                      m->statusLine() + "\n" + view_->logText()));
    QCOMPARE(m->step(), double(kTotalSteps));
    QVERIFY2(view_->logText().contains(QStringLiteral("resuming at step %1").arg(stopped_at)),
             qPrintable(view_->logText()));
    // The resumed leg was started from the spec as run, overrides passed again.
    const QStringList args = EngineProcess::arguments(view_->engine(0)->options());
    QCOMPARE(args.mid(0, 2), QStringList({"--spec", QDir(run_dir_).filePath("spec.txt")}));
    QVERIFY(args.contains("total_steps=6"));

    // The plotted series continues: every step once, the first leg's points kept as they were.
    const Series& after = *m->series("loss_total");
    QVERIFY2(strictlyIncreasing(after), qPrintable(describe(after)));
    QCOMPARE(after.steps.last(), double(kTotalSteps));
    QCOMPARE(after.size(), kTotalSteps);  // logging every step: steps 1..6, none twice
    for (int i = 0; i < before.size(); ++i) {
      QCOMPARE(after.steps[i], before.steps[i]);
      QCOMPARE(after.values[i], before.values[i]);
    }
    QVERIFY(strictlyIncreasing(*m->series("lr")));
    // The evaluations and checkpoints the engine reported.
    const Series* ap = m->series("bbox_AP");
    QVERIFY2(ap && !ap->isEmpty(), "no eval event reached the model");
    QCOMPARE(ap->steps.last(), double(kTotalSteps));
    QVERIFY(m->lastEvalStep() == kTotalSteps);
    QVERIFY(view_->detailsText().contains("eval at step 6"));
    QCOMPARE(m->lastCheckpointStep(), double(kTotalSteps));
    checkpoint_ = QDir(run_dir_).absoluteFilePath(
        !m->bestCheckpoint().isEmpty() ? m->bestCheckpoint() : m->lastCheckpoint());
    QVERIFY2(QFile::exists(checkpoint_), qPrintable(checkpoint_));
    QVERIFY(!view_->resumeEnabled());
    QVERIFY(view_->plot("bbox_AP")->drawnPoints(0, 0).size() >= 1);
    live_series_ = m->allSeries();
    qInfo("train, stop at step %g, resume to %d: %.1f s", stopped_at, kTotalSteps,
          clock.elapsed() / 1000.0);
  }

  // Inference through the engine with the run's checkpoint on a shapes val image: the results
  // file is read, the detections drawn, the slider filters them.
  void predictWithTheCheckpoint() {
    if (checkpoint_.isEmpty()) QSKIP("no checkpoint: the training test failed");
    QElapsedTimer clock;
    clock.start();
    const QString val_json = dir_.filePath("shapes/annotations/instances_val.json");
    QFile f(val_json);
    QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(val_json));
    const QJsonObject gt = QJsonDocument::fromJson(f.readAll()).object();
    const QString file_name = gt["images"].toArray().first()["file_name"].toString();
    const QString image = dir_.filePath("shapes/images/val/" + file_name);
    QVERIFY2(QFile::exists(image), qPrintable(image));

    PredictionView view;
    view.resize(1100, 700);
    view.show();
    view.setSpec(QDir(run_dir_).filePath("spec.txt"));
    view.setCheckpoint(checkpoint_);
    view.setAnnotations(val_json);
    view.setOutputRoot(dir_.filePath("predictions"));
    QSignalSpy inferred(&view, &PredictionView::inferenceFinished);
    QSignalSpy loaded(&view, &PredictionView::resultsLoaded);
    QSignalSpy shown(&view, &PredictionView::imageShown);
    view.runOnImage(image);
    QVERIFY(inferred.wait(kStepTimeoutMs));
    QVERIFY2(inferred.last().at(0).toBool(),
             qPrintable(inferred.last().at(1).toString() + "\n" + view.logText()));
    QVERIFY(loaded.count() > 0 || loaded.wait(30000));
    QVERIFY2(loaded.last().at(0).toBool(), qPrintable(loaded.last().at(1).toString()));
    // Event lines, if the engine sends them, are shown as text, not raw JSON.
    for (const QString& line : view.logText().split('\n'))
      QVERIFY2(!line.startsWith("{\""), qPrintable(line));

    const PredictionSet* set = view.predictions();
    QVERIFY(set);
    QVERIFY(set->path.startsWith(dir_.filePath("predictions")));
    const QString out = QFileInfo(set->path).absolutePath();
    QVERIFY2(QFile::exists(QDir(out).filePath(QFileInfo(file_name).completeBaseName() + ".png")),
             "the engine's overlay image is missing");
    // What the engine wrote, read independently, is what the view holds.
    QFile results(set->path);
    QVERIFY(results.open(QIODevice::ReadOnly));
    const QJsonArray written = QJsonDocument::fromJson(results.readAll()).array();
    QCOMPARE(set->count, static_cast<size_t>(written.size()));
    QVERIFY2(set->count > 0, "the engine returned no detection at test_score_thresh 0");
    QCOMPARE(set->images.size(), size_t(1));
    QCOMPARE(set->images[0].file_name, QFileInfo(image).fileName());
    double max_score = 0;
    for (const QJsonValue& d : written) {
      max_score = std::max(max_score, d["score"].toDouble());
      QVERIFY(d["segmentation"].isObject());  // masks came back
    }

    // The detections reach the image view; the slider hides those below it (the count at
    // each threshold taken from the file, not from the view).
    QVERIFY(shown.count() > 0 || shown.wait(30000));
    for (const double t : {0.0, 0.01, std::floor(max_score * 100) / 100.0, 0.5, 1.0}) {
      view.setScoreThreshold(t);
      size_t above = 0;
      for (const QJsonValue& d : written)
        above += d["score"].toDouble() >= view.scoreThreshold();
      QCOMPARE(view.predictionImageView()->instances().size(), above);
      if (t == 0.0) QCOMPARE(above, set->count);
    }
    // The ground truth of the same image beside it.
    view.setMode(PredictionView::Mode::SideBySide);
    QVERIFY(view.groundTruthImageView()->isVisible());
    QVERIFY(!view.groundTruthImageView()->instances().empty());
    // Model-assisted labelling: the run's detections at the threshold it ran with, as a draft
    // that opens in the dataset browser's annotation editor.
    QVERIFY(view.draftButton()->isEnabled());
    QSignalSpy draft(&view, &PredictionView::editDraft);
    QTest::mouseClick(view.draftButton(), Qt::LeftButton);
    QCOMPARE(draft.size(), 1);
    const QString draft_json = draft.first().at(0).toString();
    QCOMPARE(QFileInfo(draft_json).absolutePath(), out);
    DatasetBrowser browser;
    browser.resize(1000, 700);
    browser.show();
    QSignalSpy opened(&browser, &DatasetBrowser::datasetLoaded);
    QSignalSpy drawn(&browser, &DatasetBrowser::imageShown);
    browser.openDataset(draft_json, draft.first().at(1).toString());
    QVERIFY(opened.wait(20000));
    QVERIFY2(opened.first().at(0).toBool(), qPrintable(opened.first().at(1).toString()));
    QCOMPARE(browser.model()->rowCount(), 1);
    browser.grid()->setCurrentIndex(browser.model()->index(0));
    QVERIFY(drawn.wait(20000));
    browser.setEditing(true);
    QVERIFY(browser.editing());
    size_t kept = 0;
    for (const QJsonValue& d : written) kept += d["score"].toDouble() >= 0.5;
    QVERIFY(browser.edits()->ofImage(browser.currentImageId()).size() <= kept);
    qInfo("inference on one image: %.1f s, %zu detections, best score %.3g",
          clock.elapsed() / 1000.0, set->count, max_score);
  }

  // The finished run reopened from its events.jsonl: the same series, status and checkpoint.
  void reopenedRunHasTheSameSeries() {
    if (live_series_.isEmpty()) QSKIP("no live run: the training test failed");
    RunsView reopened;
    reopened.openRun(run_dir_);
    QCOMPARE(reopened.runCount(), 1);
    const RunModel* m = reopened.run(0);
    QCOMPARE(m->status(), RunStatus::Ok);
    QCOMPARE(m->step(), double(kTotalSteps));
    QCOMPARE(QDir(run_dir_).absoluteFilePath(!m->bestCheckpoint().isEmpty() ? m->bestCheckpoint()
                                                                            : m->lastCheckpoint()),
             checkpoint_);
    QCOMPARE(m->allSeries().keys().size(), live_series_.keys().size());
    for (auto it = live_series_.constBegin(); it != live_series_.constEnd(); ++it) {
      const Series* s = m->series(it.key());
      QVERIFY2(s, qPrintable(it.key()));
      QCOMPARE(s->steps, it.value().steps);
      QCOMPARE(s->values, it.value().values);
    }
    reopened.refreshNow();
    QCOMPARE(reopened.plot("loss_total")->drawnPoints(0, 0).size(), kTotalSteps);
  }

  // Prune… → dialog (TAO's defaults, a non-empty folder refused) → the engine's prune in the
  // run → the result (ratio, one table row a layer) → Retrain… → the spec → training it.
  void pruneAndRetrainFromTheRunsView() {
    if (!view_ || checkpoint_.isEmpty()) QSKIP("no run: the training test failed");
    QElapsedTimer clock;
    clock.start();
    view_->selectRows({view_->rowOf(run_dir_)});
    QVERIFY(view_->pruneEnabled());
    PruneFlow flow(view_.get(), view_.get());
    QCOMPARE(view_->modelCheckpointOf(run_dir_), checkpoint_);
    const QString out = dir_.filePath("pruned");
    QDir().mkpath(dir_.filePath("taken"));
    QFile taken(dir_.filePath("taken/file"));
    QVERIFY(taken.open(QIODevice::WriteOnly));
    taken.close();
    QString dialog_problem;
    PruneDialog::Values defaults;
    // The modal dialog as a user fills it: a folder with a file in it first (refused), then
    // a new one and a threshold that prunes this barely trained model.
    QTimer::singleShot(0, this, [&] {
      auto* d = qobject_cast<PruneDialog*>(QApplication::activeModalWidget());
      if (!d) return;
      defaults = d->values();
      PruneDialog::Values v = d->values();
      v.output_dir = dir_.filePath("taken");
      d->setValues(v);
      d->accept();
      dialog_problem = d->problemText();
      v.output_dir = out;
      v.threshold = 0.95;
      v.granularity = 4;
      v.min_filters = 8;
      d->setValues(v);
      d->accept();
    });
    QSignalSpy finished(view_.get(), &RunsView::runFinished);
    button(view_.get(), "Prune…")->click();
    QCOMPARE(defaults.threshold, 0.1);
    QCOMPARE(defaults.normalizer, QString("max"));
    QCOMPARE(defaults.equalization, QString("union"));
    QCOMPARE(defaults.granularity, 8);
    QCOMPARE(defaults.min_filters, 16);
    QVERIFY(defaults.output_dir.startsWith(run_dir_ + "/pruned/"));
    QVERIFY2(dialog_problem.contains("is not empty"), qPrintable(dialog_problem));
    QVERIFY(finished.wait(kStepTimeoutMs));
    const RunModel* m = view_->run(view_->rowOf(run_dir_));
    QCOMPARE(m->task(), QString("prune"));
    QVERIFY2(m->status() == RunStatus::Ok, qPrintable(view_->logText()));
    QVERIFY(view_->logText().contains("kept filters per layer"));
    QTRY_VERIFY_WITH_TIMEOUT(flow.resultDialog() != nullptr, 5000);
    const std::optional<PruneStatus> status = readPruneStatus(out);
    QVERIFY(status);
    QVERIFY(status->pruning_ratio < 1.0);
    QCOMPARE(flow.resultDialog()->table()->rowCount(), 1 + 4 * 2 + 3 + 1 + 4);
    // In the network's order, as status.json lists the layers (the stem first).
    QCOMPARE(flow.resultDialog()->table()->item(0, 0)->text(), status->layers.front().name);
    QCOMPARE(status->layers.front().name, QString("backbone.body.conv1"));
    QVERIFY(flow.resultDialog()->summaryText().contains(
        QString("pruning ratio %1").arg(status->pruning_ratio, 0, 'f', 3)));

    // The same result opened later from its folder (mrcnn-workbench --prune-result DIR): the
    // run it came from is found from the weights it pruned; weights from outside a run leave
    // Retrain… off; a folder without status.json is refused, naming the file.
    QCOMPARE(status->weights, checkpoint_);
    QCOMPARE(sourceRunOf(*status), run_dir_);
    PruneFlow reopened(view_.get(), view_.get());
    QVERIFY(reopened.openResult(out));
    QCOMPARE(reopened.resultDialog()->table()->rowCount(),
             flow.resultDialog()->table()->rowCount());
    PruneStatus elsewhere = *status;
    elsewhere.weights = dir_.filePath("model.pt");
    QVERIFY(sourceRunOf(elsewhere).isEmpty());
    QString error;
    QVERIFY(!reopened.openResult(dir_.filePath("taken"), &error));
    QVERIFY2(error.startsWith(dir_.filePath("taken/status.json") + ": "), qPrintable(error));

    QSignalSpy spec_ready(&flow, &PruneFlow::retrainSpecReady);
    flow.resultDialog()->retrain();
    QCOMPARE(spec_ready.count(), 1);
    const QString spec = spec_ready.first().first().toString();
    QCOMPARE(spec, out + "/retrain_spec.txt");
    QFile spec_file(spec);
    QVERIFY(spec_file.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(spec_file.readAll());
    QVERIFY2(text.contains("pruned_model_path: \"" + out + "/model.pt\""), qPrintable(text));
    QVERIFY2(text.contains("run_name: \"tiny_retrain\""), qPrintable(text));

    // The retrain spec runs as any spec: the pruned model trains on.
    const QString retrain_dir = dir_.filePath("runs/tiny_retrain");
    // One step in fp32: bf16 autocast crawls on a CPU without native bf16.
    view_->startRun(spec, "train", retrain_dir,
                    {"total_steps=1", "num_steps_per_eval=1", "use_amp=False"});
    QVERIFY(finished.wait(3 * kStepTimeoutMs));
    const RunModel* r = view_->run(view_->rowOf(retrain_dir));
    QVERIFY2(r && r->status() == RunStatus::Ok, qPrintable(view_->logText()));
    QVERIFY2(r->log().join('\n').contains("pruned layers"), qPrintable(r->log().join('\n')));
    qInfo("prune and retrain from the Runs view: %.1f s", clock.elapsed() / 1000.0);
  }

  // Export… → dialog (fp32 and a new folder by default; an existing folder refused) → int8
  // calibrated on the run's validation images through the engine in the run → the report in
  // the result dialog (the calibration, each layer int8 or float and why, the biases
  // corrected) → Run in Predictions → the int8 model run by OpenVINO in the Predictions view.
  void exportInt8FromTheRunsView() {
    if (!view_ || checkpoint_.isEmpty()) QSKIP("no run: the training test failed");
    QElapsedTimer clock;
    clock.start();
    view_->selectRows({view_->rowOf(run_dir_)});
    QVERIFY(view_->exportEnabled());
    ExportFlow flow(view_.get(), view_.get());
    QCOMPARE(view_->modelCheckpointOf(run_dir_), checkpoint_);
    const QString out = dir_.filePath("exported-int8");
    QVERIFY(QDir().mkpath(dir_.filePath("taken-export")));
    ExportDialog::Values defaults;
    QString dialog_problem;
    QTimer::singleShot(0, this, [&] {
      auto* d = qobject_cast<ExportDialog*>(QApplication::activeModalWidget());
      if (!d) return;
      defaults = d->values();
      ExportDialog::Values v = d->values();
      v.output_dir = dir_.filePath("taken-export");
      d->setValues(v);
      d->accept();
      dialog_problem = d->problemText();
      v.output_dir = out;
      v.data_type = "int8";
      v.cal_images = 2;
      d->setValues(v);
      d->accept();
    });
    QSignalSpy finished(view_.get(), &RunsView::runFinished);
    button(view_.get(), "Export…")->click();
    QCOMPARE(defaults.data_type, QString("fp32"));
    QCOMPARE(defaults.cal_range, QString("auto"));
    QVERIFY(defaults.bias_correction);
    QCOMPARE(defaults.output_dir,
             run_dir_ + "/export/" + QFileInfo(checkpoint_).completeBaseName());
    QVERIFY2(dialog_problem.contains("exists; an export never replaces"),
             qPrintable(dialog_problem));
    QVERIFY(finished.wait(3 * kStepTimeoutMs));
    const RunModel* m = view_->run(view_->rowOf(run_dir_));
    QCOMPARE(m->task(), QString("export"));
    // A six-step model's near-tied scores may fail the parity check (exit 1, the report kept
    // for inspection); the result shows the report either way.
    qInfo("export: %s", qPrintable(m->statusLine()));
    QTRY_VERIFY_WITH_TIMEOUT(flow.resultDialog() != nullptr, 5000);
    const std::optional<ExportReport> report = readExportReport(out);
    QVERIFY(report);
    const QString summary = flow.resultDialog()->summaryText();
    QVERIFY2(summary.contains("model.int8.onnx: ") && summary.contains("Calibration: 2 images") &&
                 summary.contains(" biases corrected") && summary.contains(m->statusLine()),
             qPrintable(summary));
    QTableWidget* table = flow.resultDialog()->layersTable();
    QVERIFY(table);
    QCOMPARE(table->rowCount(), report->layers.size());
    QVERIFY(table->rowCount() > 20);
    for (int r = 0; r < table->rowCount(); ++r) {
      QCOMPARE(table->item(r, 0)->text(), report->layers[r].weights);
      const bool int8 = table->item(r, 1)->text() == "int8";
      QCOMPARE(int8, report->layers[r].quantised);
      QCOMPARE(!table->item(r, 2)->text().isEmpty(), int8);  // every int8 layer's bias corrected
    }
    // The same report opened later from its folder (mrcnn-workbench --export-result DIR); a
    // folder without one is refused, naming the file.
    ExportFlow reopened(view_.get(), view_.get());
    QVERIFY(reopened.openResult(out));
    QCOMPARE(reopened.resultDialog()->layersTable()->rowCount(), table->rowCount());
    QString error;
    QVERIFY(!reopened.openResult(dir_.filePath("taken-export"), &error));
    QVERIFY2(error.startsWith(dir_.filePath("taken-export/export_report.json") + ": "),
             qPrintable(error));
    QSignalSpy predictions(&flow, &ExportFlow::predictionsRequested);
    flow.resultDialog()->runInPredictions();
    QCOMPARE(predictions.count(), 1);
    QCOMPARE(predictions.first().at(0).toString(), QDir(run_dir_).filePath("spec.txt"));
    QCOMPARE(predictions.first().at(1).toString(), out + "/model.int8.onnx");

    // The int8 model in the Predictions view, with OpenVINO, on a validation image.
    PredictionView pv;
    pv.setSpec(predictions.first().at(0).toString());
    pv.setBackend("openvino");
    pv.setExportedModel(predictions.first().at(1).toString());
    pv.setOutputRoot(dir_.filePath("predictions-int8"));
    QSignalSpy inferred(&pv, &PredictionView::inferenceFinished);
    pv.runOnFolder(dir_.filePath("shapes/images/val"));
    QVERIFY(inferred.wait(kStepTimeoutMs));
    QVERIFY2(inferred.last().at(0).toBool(),
             qPrintable(inferred.last().at(1).toString() + "\n" + pv.logText()));
    // int8, its float layers in f32 or (the spec's bf16 autocast, on a CPU with bf16) bf16.
    QVERIFY2(pv.logText().contains(" int8+f32 on CPU") || pv.logText().contains(" int8+bf16 on CPU"),
             qPrintable(pv.logText()));
    qInfo("int8 export and its predictions from the GUI: %.1f s", clock.elapsed() / 1000.0);
  }

  // label_check from the Runs view (the spec editor's task box offers it): the engine checks
  // the run's validation split with its model; the mistakes it writes open in the review.
  void labelCheckFromTheRunsView() {
    if (checkpoint_.isEmpty()) QSKIP("no checkpoint: the training test failed");
    QSignalSpy finished(view_.get(), &RunsView::runFinished);
    const QString spec = qEnvironmentVariable("MRCNN_SOURCE_DIR") + "/specs/shapes_resnet18.txt";
    view_->startRun(spec, "label_check", run_dir_,
                    overrides() << "eval_batch_size=2", {"--score-threshold", "0.05"});
    QVERIFY(finished.wait(kStepTimeoutMs));
    const RunModel* m = view_->run(view_->rowOf(QDir::cleanPath(run_dir_)));
    QVERIFY(m);
    QCOMPARE(m->task(), QString("label_check"));
    QVERIFY2(m->status() == RunStatus::Ok, qPrintable(m->statusLine() + "\n" + view_->logText()));
    const QString mistakes = QDir(run_dir_).filePath("label_check/mistakes.json");
    QVERIFY2(QFile::exists(mistakes), qPrintable(view_->logText()));
    mrcnn::ui::LabelReview review;
    QString error;
    QVERIFY2(review.openMistakes(mistakes, {}, &error), qPrintable(error));
  }

  void cleanupTestCase() { view_.reset(); }
};

QTEST_MAIN(EngineRunsTest)
#include "test_engine_runs.moc"

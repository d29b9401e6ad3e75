#include "ui/export/export_flow.h"

#include <QDir>
#include <QFileInfo>

#include "ui/export/export_result.h"
#include "ui/run_monitor/run_model.h"
#include "ui/run_monitor/runs_view.h"

namespace mrcnn::ui {

ExportFlow::ExportFlow(RunsView* runs, QWidget* window)
    : QObject(window), runs_(runs), window_(window) {
  connect(runs_, &RunsView::exportRequested, this, &ExportFlow::requestExport);
  connect(runs_, &RunsView::runFinished, this, &ExportFlow::onRunFinished);
}

ExportResultDialog* ExportFlow::resultDialog() const {
  return result_;
}

void ExportFlow::requestExport(const QString& runDir) {
  const QString checkpoint = runs_->modelCheckpointOf(runDir);
  if (checkpoint.isEmpty()) return;
  ExportDialog dialog(runDir, checkpoint, window_);
  if (dialog.exec() == QDialog::Accepted) startExport(runDir, dialog.values());
}

void ExportFlow::startExport(const QString& runDir, const ExportDialog::Values& values) {
  const QString dir = QDir::cleanPath(QFileInfo(runDir).absoluteFilePath());
  pending_.insert(dir, QFileInfo(values.output_dir).absoluteFilePath());
  runs_->startRun(QDir(dir).filePath(QStringLiteral("spec.txt")), QStringLiteral("export"), dir,
                  {}, ExportDialog::engineArguments(runs_->modelCheckpointOf(dir), values));
}

void ExportFlow::onRunFinished(const QString& runDir) {
  const auto it = pending_.find(runDir);
  if (it == pending_.end()) return;
  const QString out = it.value();
  pending_.erase(it);
  const RunModel* run = runs_->run(runs_->rowOf(runDir));
  const QString outcome = run ? run->statusLine() : tr("the run is no longer listed");
  QString error;
  const std::optional<ExportReport> report = readExportReport(out, &error);
  if (!report) {
    emit exportFailed(runDir, run && run->status() != RunStatus::Ok ? outcome : error);
    return;
  }
  showResult(*report, outcome, QDir(runDir).filePath(QStringLiteral("spec.txt")));
}

bool ExportFlow::openResult(const QString& exportDir, QString* error) {
  const std::optional<ExportReport> report = readExportReport(exportDir, error);
  if (!report) return false;
  // The run the weights came from, for its spec.
  const QString weights = report->json.value(QStringLiteral("weights")).toString();
  const QString run = runOfCheckpoint(weights);
  showResult(*report, tr("An export of %1").arg(weights),
             run.isEmpty() ? QString() : QDir(run).filePath(QStringLiteral("spec.txt")));
  return true;
}

void ExportFlow::showResult(const ExportReport& report, const QString& outcome,
                            const QString& spec) {
  delete result_;
  result_ = new ExportResultDialog(report, outcome, window_);
  result_->setAttribute(Qt::WA_DeleteOnClose);
  connect(result_, &ExportResultDialog::predictionsRequested, this,
          [this, spec](const QString& model) { emit predictionsRequested(spec, model); });
  result_->show();
}

}  // namespace mrcnn::ui

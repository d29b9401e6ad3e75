#include "ui/prune/prune_flow.h"

#include <QDir>
#include <QFileInfo>

#include "ui/prune/prune_result.h"
#include "ui/run_monitor/run_model.h"
#include "ui/run_monitor/runs_view.h"

namespace mrcnn::ui {

PruneFlow::PruneFlow(RunsView* runs, QWidget* window)
    : QObject(window), runs_(runs), window_(window) {
  connect(runs_, &RunsView::pruneRequested, this, &PruneFlow::requestPrune);
  connect(runs_, &RunsView::runFinished, this, &PruneFlow::onRunFinished);
}

PruneResultDialog* PruneFlow::resultDialog() const {
  return result_;
}

void PruneFlow::requestPrune(const QString& runDir) {
  const QString checkpoint = runs_->modelCheckpointOf(runDir);
  if (checkpoint.isEmpty()) return;
  PruneDialog dialog(runDir, checkpoint, window_);
  if (dialog.exec() == QDialog::Accepted) startPrune(runDir, dialog.values());
}

void PruneFlow::startPrune(const QString& runDir, const PruneDialog::Values& values) {
  const QString dir = QDir::cleanPath(QFileInfo(runDir).absoluteFilePath());
  pending_.insert(dir, QFileInfo(values.output_dir).absoluteFilePath());
  runs_->startRun(QDir(dir).filePath(QStringLiteral("spec.txt")), QStringLiteral("prune"), dir, {},
                  PruneDialog::engineArguments(runs_->modelCheckpointOf(dir), values));
}

void PruneFlow::onRunFinished(const QString& runDir) {
  const auto it = pending_.find(runDir);
  if (it == pending_.end()) return;
  const QString out = it.value();
  pending_.erase(it);
  const RunModel* run = runs_->run(runs_->rowOf(runDir));
  if (!run || run->status() != RunStatus::Ok) {
    emit pruneFailed(runDir, run ? run->statusLine() : tr("the run is no longer listed"));
    return;
  }
  QString error;
  const std::optional<PruneStatus> status = readPruneStatus(out, &error);
  if (!status) {
    emit pruneFailed(runDir, error);
    return;
  }
  showResult(runDir, *status);
}

bool PruneFlow::openResult(const QString& pruneDir, QString* error) {
  const std::optional<PruneStatus> status = readPruneStatus(pruneDir, error);
  if (!status) return false;
  showResult(sourceRunOf(*status), *status);
  return true;
}

void PruneFlow::showResult(const QString& runDir, const PruneStatus& status) {
  delete result_;
  result_ = new PruneResultDialog(runDir, status, window_);
  result_->setAttribute(Qt::WA_DeleteOnClose);
  connect(result_, &PruneResultDialog::retrainSpecReady, this, &PruneFlow::retrainSpecReady);
  result_->show();
}

}  // namespace mrcnn::ui

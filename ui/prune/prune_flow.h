// Prune from the GUI, start to end: the Runs view's Prune… opens the dialog for the current
// run's checkpoint (its best, else its last); the prune runs as an engine task in the run's
// directory (the Runs view follows it: its log shows the per-layer table); when it ends well
// the result dialog shows the ratio and the table, and its Retrain… hands a retrain spec to
// whoever opens specs (the main window's editor).
#pragma once

#include <QHash>
#include <QObject>
#include <QPointer>
#include <QString>

#include "ui/prune/prune_dialog.h"

namespace mrcnn::ui {

class PruneResultDialog;
class RunsView;
struct PruneStatus;

class PruneFlow : public QObject {
  Q_OBJECT

 public:
  // `window` parents the dialogs.
  PruneFlow(RunsView* runs, QWidget* window);

  // Starts the prune of the run with these values (what the dialog's OK does).
  void startPrune(const QString& runDir, const PruneDialog::Values& values);
  // The result dialog of the last prune that ended well or was opened (null before).
  PruneResultDialog* resultDialog() const;
  // Shows the result of a prune done earlier (the GUI's or `--task prune`'s output folder);
  // Retrain… uses the run its checkpoint came from. False with the reason when status.json
  // cannot be read.
  bool openResult(const QString& pruneDir, QString* error = nullptr);

 public slots:
  // The dialog for the run, then startPrune.
  void requestPrune(const QString& runDir);

 signals:
  void retrainSpecReady(const QString& specPath);
  // A prune ended without a result to show (the engine failed, status.json unreadable).
  void pruneFailed(const QString& runDir, const QString& why);

 private:
  void onRunFinished(const QString& runDir);
  void showResult(const QString& runDir, const PruneStatus& status);

  RunsView* runs_;
  QWidget* window_;
  QHash<QString, QString> pending_;  // run dir -> the prune's output folder
  QPointer<PruneResultDialog> result_;
};

}  // namespace mrcnn::ui

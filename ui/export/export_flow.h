// Export from the GUI, start to end: the Runs view's Export… opens the dialog for the current
// run's checkpoint (its best, else its last); the export runs as an engine task in the run's
// directory (the Runs view follows it: its log shows the calibration and the checks); when it
// ends, the result dialog shows the report (also after a failed parity, whose export is kept
// for inspection), and its Run in Predictions hands the exported model to whoever runs
// predictions (the main window's Predictions view).
#pragma once

#include <QHash>
#include <QObject>
#include <QPointer>
#include <QString>

#include "ui/export/export_dialog.h"

namespace mrcnn::ui {

class ExportResultDialog;
class RunsView;
struct ExportReport;

class ExportFlow : public QObject {
  Q_OBJECT

 public:
  // `window` parents the dialogs.
  ExportFlow(RunsView* runs, QWidget* window);

  // Starts the export of the run with these values (what the dialog's OK does).
  void startExport(const QString& runDir, const ExportDialog::Values& values);
  // The result dialog of the last export that ended with a report or was opened (null before).
  ExportResultDialog* resultDialog() const;
  // Shows the report of an export done earlier (the GUI's or `--task export`'s output folder).
  // False with the reason when export_report.json cannot be read.
  bool openResult(const QString& exportDir, QString* error = nullptr);

 public slots:
  // The dialog for the run, then startExport.
  void requestExport(const QString& runDir);

 signals:
  // Run the exported model with OpenVINO: the run's spec and the model file.
  void predictionsRequested(const QString& spec, const QString& model);
  // An export ended without a report to show (refused before writing, the engine failed).
  void exportFailed(const QString& runDir, const QString& why);

 private:
  void onRunFinished(const QString& runDir);
  // `spec`: the spec Run in Predictions opens with the model (may be empty).
  void showResult(const ExportReport& report, const QString& outcome, const QString& spec);

  RunsView* runs_;
  QWidget* window_;
  QHash<QString, QString> pending_;  // run dir -> the export's output folder
  QPointer<ExportResultDialog> result_;
};

}  // namespace mrcnn::ui

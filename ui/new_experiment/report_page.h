// The New Experiment wizard's second page: runs the import (ImportJob, off the UI thread)
// with its progress lines shown, then its report: the printed summary (images and instances
// per split and class) and every warning and skip with its file and place. A failed import
// shows its error naming the file and the place, and Next stays off; Back goes to the data.
#pragma once

#include <QWizardPage>
#include <memory>
#include <string>

#include "ui/new_experiment/import_job.h"

class QLabel;
class QPlainTextEdit;
class QTreeWidget;

namespace mrcnn::ui {

class DataPage;

class ReportPage : public QWizardPage {
  Q_OBJECT

 public:
  ReportPage(DataPage* data_page, QWidget* parent = nullptr);

  // The imported data set, null until an import succeeded.
  std::shared_ptr<const ImportedData> data() const { return data_; }
  bool isImporting() const { return job_->isRunning(); }
  ImportJob* job() const { return job_; }

  QLabel* statusLabel() const { return status_; }
  QPlainTextEdit* summaryText() const { return summary_; }
  QTreeWidget* problems() const { return problems_; }

  void initializePage() override;
  bool isComplete() const override;

 signals:
  // An import ended (ok or not): for tests and the screenshot.
  void importFinished(bool ok);

 private:
  void importDone(const ImportOutcome& outcome);
  void showReport(const ImportedData& data);
  // The options of the data page as text, to tell whether an import can be reused.
  std::string optionsKey() const;

  DataPage* data_page_;
  ImportJob* job_;
  QLabel* status_;
  QPlainTextEdit* summary_;
  QLabel* problems_label_;
  QTreeWidget* problems_;
  std::shared_ptr<const ImportedData> data_;
  std::string imported_key_;  // the options data_ was imported with
  std::string started_key_;   // the options of the running import
  bool pending_ = false;      // shown again while an import ran: start anew once it ends
};

}  // namespace mrcnn::ui

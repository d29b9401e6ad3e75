// File › New Experiment from Data…: a wizard from a folder of labelled images to a spec ready
// to run. Its pages, in order: the data and the experiment folder (DataPage), the import and
// its report (ReportPage), the dataset check (CheckPage), the start and the training length
// (WeightsPage), whose Finish writes the validated spec; specWritten then hands it to the
// main window, which opens it in the spec editor.
#pragma once

#include <QString>
#include <QWizard>

namespace mrcnn::ui {

class CheckPage;
class DataPage;
class ReportPage;
class WeightsPage;

class NewExperimentWizard : public QWizard {
  Q_OBJECT

 public:
  enum PageId { kDataPage, kReportPage, kCheckPage, kWeightsPage };

  explicit NewExperimentWizard(QWidget* parent = nullptr);

  DataPage* dataPage() const { return data_; }
  ReportPage* reportPage() const { return report_; }
  CheckPage* checkPage() const { return check_; }
  WeightsPage* weightsPage() const { return weights_; }
  // The spec Finish wrote, "" before.
  QString writtenSpec() const;

  // Steps Next while the current page is complete, waiting for the import, until `page` is
  // shown or a page stops it (an error shown there): the command line's --new-experiment-page
  // and the tests drive the wizard as a person would.
  void advanceTo(PageId page);

  void accept() override;

 signals:
  void specWritten(const QString& path);

 private:
  DataPage* data_;
  ReportPage* report_;
  CheckPage* check_;
  WeightsPage* weights_;
  int target_page_ = kDataPage;
};

}  // namespace mrcnn::ui

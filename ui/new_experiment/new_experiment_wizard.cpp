#include "ui/new_experiment/new_experiment_wizard.h"

#include "ui/new_experiment/check_page.h"
#include "ui/new_experiment/data_page.h"
#include "ui/new_experiment/report_page.h"
#include "ui/new_experiment/weights_page.h"

namespace mrcnn::ui {

NewExperimentWizard::NewExperimentWizard(QWidget* parent)
    : QWizard(parent),
      data_(new DataPage(this)),
      report_(new ReportPage(data_, this)),
      check_(new CheckPage(report_, this)),
      weights_(new WeightsPage(data_, report_, this)) {
  setObjectName(u"newExperimentWizard"_qs);
  setWindowTitle(tr("New Experiment from Data"));
  // The same look on every platform: the report and the charts need the room that the
  // classic style's side banner would take.
  setWizardStyle(QWizard::ModernStyle);
  setOption(QWizard::NoBackButtonOnStartPage);
  setPage(kDataPage, data_);
  setPage(kReportPage, report_);
  setPage(kCheckPage, check_);
  setPage(kWeightsPage, weights_);
  setButtonText(QWizard::FinishButton, tr("Write the Spec"));
  resize(980, 760);
  connect(report_, &ReportPage::importFinished, this, [this](bool ok) {
    if (ok) advanceTo(static_cast<PageId>(target_page_));
  });
}

void NewExperimentWizard::advanceTo(PageId page) {
  target_page_ = page;
  while (currentId() >= 0 && currentId() < page && currentPage()->isComplete()) {
    const int before = currentId();
    next();
    if (currentId() == before) return;  // the page refused (its error is shown)
  }
  // Reached: a later import (the user going back and forth) no longer steps on by itself.
  if (currentId() >= page) target_page_ = kDataPage;
}

QString NewExperimentWizard::writtenSpec() const {
  return weights_->writtenSpec();
}

void NewExperimentWizard::accept() {
  // QWizard::done validates the last page, which writes the spec, then hides the wizard (a
  // wizard deleted on close goes with deleteLater, so this object is still whole here).
  QWizard::accept();
  if (!writtenSpec().isEmpty()) emit specWritten(writtenSpec());
}

}  // namespace mrcnn::ui

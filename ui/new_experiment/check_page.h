// The New Experiment wizard's third page: the dataset check of the imported files, as the
// Dataset view's Statistics tab shows it (DatasetStatsView: classes, sizes, aspect ratios,
// instances per image, anchor coverage, problems), for the training or the validation split,
// and what the spec takes from it (the input canvas, an anchor aspect pair).
#pragma once

#include <QWizardPage>

class QComboBox;
class QLabel;

namespace mrcnn::ui {

class DatasetStatsView;
class ReportPage;

class CheckPage : public QWizardPage {
  Q_OBJECT

 public:
  CheckPage(ReportPage* report, QWidget* parent = nullptr);

  DatasetStatsView* statsView() const { return stats_; }
  QComboBox* setChoice() const { return set_; }
  QLabel* suggestionLabel() const { return suggestion_; }

  void initializePage() override;

 private:
  void showSet(int index);

  ReportPage* report_;
  QComboBox* set_;
  QLabel* suggestion_;
  DatasetStatsView* stats_;
};

}  // namespace mrcnn::ui

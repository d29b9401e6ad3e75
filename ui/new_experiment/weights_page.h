// The New Experiment wizard's last page: how training starts — from scratch, an ImageNet
// backbone by name, torchvision's COCO Mask R-CNN by name (names from the weights catalogue,
// weights/catalogue.h) or a weights file — with a backbone depth consistent with the weights,
// the training length, and the spec's name. Finish validates the spec and writes it.
#pragma once

#include <QString>
#include <QWizardPage>

#include "ui/new_experiment/experiment_spec.h"

class QButtonGroup;
class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QRadioButton;
class QSpinBox;

namespace mrcnn::ui {

class DataPage;
class ReportPage;

class WeightsPage : public QWizardPage {
  Q_OBJECT

 public:
  WeightsPage(DataPage* data_page, ReportPage* report, QWidget* parent = nullptr);

  ExperimentChoices choices() const;
  // Where the spec goes: the experiment folder and the name.
  QString specPath() const;
  // The spec written by Finish ("" before).
  QString writtenSpec() const { return written_; }

  void setStart(ExperimentChoices::Start start);
  // Selects catalogue weights by name in the ImageNet or COCO list; false when not listed.
  bool setWeightsName(const QString& name);
  void setWeightsFile(const QString& path);

  QRadioButton* startButton(ExperimentChoices::Start start) const;
  QComboBox* imageNetNames() const { return imagenet_; }
  QComboBox* cocoNames() const { return coco_; }
  QComboBox* depth() const { return depth_; }
  QSpinBox* epochs() const { return epochs_; }
  QSpinBox* batchSize() const { return batch_; }
  QCheckBox* addAnchor() const { return add_anchor_; }
  QLineEdit* specName() const { return name_; }
  QLabel* errorLabel() const { return error_; }

  void initializePage() override;
  bool isComplete() const override;
  bool validatePage() override;

 private:
  void refresh();

  DataPage* data_page_;
  ReportPage* report_;
  QButtonGroup* start_;
  QComboBox* imagenet_;
  QComboBox* coco_;
  QLineEdit* file_;
  QComboBox* depth_;
  QSpinBox* epochs_;
  QSpinBox* batch_;
  QLabel* schedule_;
  QCheckBox* add_anchor_;
  QLineEdit* name_;
  QLabel* path_;
  QLabel* error_;
  QString written_;
};

}  // namespace mrcnn::ui

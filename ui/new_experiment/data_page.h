// The New Experiment wizard's first page: the data (a folder or a file in any format the
// importer reads), its detected format with an override, the split, the seed, an optional
// labels file, and the experiment folder the import and the spec are written to.
#pragma once

#include <QString>
#include <QWizardPage>

#include "dataset/import/import.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace mrcnn::ui {

class DataPage : public QWizardPage {
  Q_OBJECT

 public:
  explicit DataPage(QWidget* parent = nullptr);

  // The import's options as chosen; output_dir is the dataset folder inside the experiment
  // folder.
  dataset::import::ImportOptions importOptions() const;
  QString experimentDir() const;
  // The format the input looks like ("" when not recognised).
  QString detectedFormat() const { return detected_; }
  // The format the import will use: the override, else the detected one.
  QString chosenFormat() const;

  void setInput(const QString& path);
  void setExperimentDir(const QString& path);

  QLineEdit* input() const { return input_; }
  QComboBox* format() const { return format_; }
  QLineEdit* split() const { return split_; }
  QSpinBox* seed() const { return seed_; }
  QLineEdit* experimentFolder() const { return output_; }
  QLabel* detectedLabel() const { return detected_label_; }
  QLabel* errorLabel() const { return error_; }

  // The experiment folder's dataset subfolder written by an import of this wizard: a later
  // import may replace it (see validatePage).
  void setOwnImport(const QString& dataset_dir) { own_import_ = dataset_dir; }

  bool isComplete() const override;
  bool validatePage() override;

 private:
  void detect();
  void checkSplit();
  void chooseInput(bool folder);
  void showError(const QString& text);

  QLineEdit* input_;
  QLabel* detected_label_;
  QComboBox* format_;
  QLineEdit* split_;
  QLabel* split_error_;
  QSpinBox* seed_;
  QLineEdit* labels_;
  QCheckBox* copy_images_;
  QLineEdit* output_;
  QLabel* error_;
  QString detected_;
  QString own_import_;
  bool output_edited_ = false;  // the user typed a folder: no longer derived from the input
  bool split_ok_ = true;
};

}  // namespace mrcnn::ui

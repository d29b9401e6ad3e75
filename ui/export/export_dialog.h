// The export dialog: a run's checkpoint to ONNX, fp32 or int8 (TAO's --data_type), with int8's
// calibration (the images, how many, the activation ranges, the bias correction) and the
// folder the export goes into, a new one (checked before the dialog accepts). What it gives
// is the engine's `--task export` options.
#pragma once

#include <QDialog>
#include <QString>
#include <QStringList>

class QCheckBox;
class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace mrcnn::ui {

class ExportDialog : public QDialog {
  Q_OBJECT

 public:
  struct Values {
    QString data_type = QStringLiteral("fp32");  // "fp32" or "int8"
    QString cal_image_dir;                        // empty: the spec's validation images
    int cal_images = 10;
    QString cal_range = QStringLiteral("auto");  // "auto", "percentile" or "minmax"
    bool bias_correction = true;
    QString output_dir;
  };

  // `checkpoint`: the weights to export (absolute path); the folder defaults to
  // <run dir>/export/<checkpoint stem>[-int8], -2, -3... where that exists.
  ExportDialog(const QString& runDir, const QString& checkpoint, QWidget* parent = nullptr);

  Values values() const;
  void setValues(const Values& values);
  // --checkpoint, --output-dir, --data_type and int8's calibration, as `mrcnn-engine --task
  // export` takes them.
  static QStringList engineArguments(const QString& checkpoint, const Values& values);
  QStringList engineArguments() const { return engineArguments(checkpoint_, values()); }
  // Empty when the values can be exported with; else what is wrong (the engine refuses an
  // existing output folder, a calibration folder that is not one).
  static QString problem(const Values& values);
  // The message under the form (why the dialog did not accept).
  QString problemText() const;

 public slots:
  void accept() override;

 private:
  void updateDefaultOutput();

  QString run_dir_;
  QString checkpoint_;
  QComboBox* data_type_ = nullptr;
  QGroupBox* int8_ = nullptr;
  QLineEdit* cal_dir_ = nullptr;
  QSpinBox* cal_images_ = nullptr;
  QComboBox* cal_range_ = nullptr;
  QCheckBox* bias_correction_ = nullptr;
  QLineEdit* output_ = nullptr;
  QLabel* problem_ = nullptr;
  bool output_edited_ = false;
};

}  // namespace mrcnn::ui

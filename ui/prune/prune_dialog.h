// The prune dialog: TAO's prune parameters for a run's checkpoint (threshold, normalizer,
// equalization criterion, granularity, minimum filters, excluded layers) and the folder the
// pruned model goes into, a new or empty one (checked before the dialog accepts). What it
// gives is the engine's `--task prune` options.
#pragma once

#include <QDialog>
#include <QString>
#include <QStringList>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace mrcnn::ui {

class PruneDialog : public QDialog {
  Q_OBJECT

 public:
  struct Values {
    double threshold = 0.1;  // TAO's defaults
    QString normalizer = QStringLiteral("max");
    QString equalization = QStringLiteral("union");
    int granularity = 8;
    int min_filters = 16;
    QStringList excluded_layers;
    QString output_dir;
  };

  // `checkpoint`: the weights to prune (absolute path); the output folder defaults to
  // <run dir>/pruned/<checkpoint stem>-pth<threshold>.
  PruneDialog(const QString& runDir, const QString& checkpoint, QWidget* parent = nullptr);

  Values values() const;
  void setValues(const Values& values);
  // --checkpoint, --output-dir and the rules, as `mrcnn-engine --task prune` takes them.
  static QStringList engineArguments(const QString& checkpoint, const Values& values);
  QStringList engineArguments() const { return engineArguments(checkpoint_, values()); }
  // Empty when the folder may receive the model (absent, or an empty folder); else why not.
  static QString outputProblem(const QString& dir);
  // The message under the form (why the dialog did not accept).
  QString problemText() const;

 public slots:
  void accept() override;

 private:
  void updateDefaultOutput();

  QString run_dir_;
  QString checkpoint_;
  QDoubleSpinBox* threshold_ = nullptr;
  QComboBox* normalizer_ = nullptr;
  QComboBox* equalization_ = nullptr;
  QSpinBox* granularity_ = nullptr;
  QSpinBox* min_filters_ = nullptr;
  QLineEdit* excluded_ = nullptr;
  QLineEdit* output_ = nullptr;
  QLabel* problem_ = nullptr;
  bool output_edited_ = false;
};

}  // namespace mrcnn::ui

#include "ui/export/export_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>

namespace mrcnn::ui {

ExportDialog::ExportDialog(const QString& runDir, const QString& checkpoint, QWidget* parent)
    : QDialog(parent), run_dir_(runDir), checkpoint_(checkpoint) {
  setWindowTitle(tr("Export %1").arg(QFileInfo(runDir).fileName()));
  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(
      tr("Writes model.onnx (and, for int8, model.int8.onnx) with labels.txt and "
         "export_report.json, and checks the export against the engine's own inference with "
         "OpenVINO. Weights: %1")
          .arg(QDir::toNativeSeparators(checkpoint)),
      this);
  intro->setWordWrap(true);
  layout->addWidget(intro);
  auto* form = new QFormLayout;
  data_type_ = new QComboBox(this);
  data_type_->addItem(tr("fp32"), QStringLiteral("fp32"));
  data_type_->addItem(tr("int8 (calibrated; its accuracy cost in the report)"),
                      QStringLiteral("int8"));
  data_type_->setToolTip(tr("TAO's --data_type: int8 adds model.int8.onnx beside model.onnx"));
  form->addRow(tr("Data type"), data_type_);
  output_ = new QLineEdit(this);
  output_->setToolTip(tr("A new folder: the export appears there whole or not at all"));
  connect(output_, &QLineEdit::textEdited, this, [this] { output_edited_ = true; });
  form->addRow(tr("Output folder"), output_);
  layout->addLayout(form);

  int8_ = new QGroupBox(tr("int8 calibration"), this);
  auto* int8_form = new QFormLayout(int8_);
  cal_dir_ = new QLineEdit(int8_);
  cal_dir_->setPlaceholderText(tr("Empty: the spec's validation images"));
  cal_dir_->setToolTip(tr("TAO's --cal_image_dir: images like those the model will see"));
  int8_form->addRow(tr("Calibration images"), cal_dir_);
  cal_images_ = new QSpinBox(int8_);
  cal_images_->setRange(1, 100000);
  cal_images_->setToolTip(tr("TAO's --batches: how many of them (one image a batch)"));
  int8_form->addRow(tr("Images used"), cal_images_);
  cal_range_ = new QComboBox(int8_);
  cal_range_->addItem(tr("auto (both built, the one closer to fp32 kept)"), QStringLiteral("auto"));
  cal_range_->addItem(tr("percentile"), QStringLiteral("percentile"));
  cal_range_->addItem(tr("min/max"), QStringLiteral("minmax"));
  cal_range_->setToolTip(tr("Each activation's range: its 99.99th percentile or its min/max"));
  int8_form->addRow(tr("Activation ranges"), cal_range_);
  bias_correction_ = new QCheckBox(tr("Correct each layer's bias for its int8 weights"), int8_);
  bias_correction_->setToolTip(
      tr("The mean error int8 weights make on the calibration images, taken back by the bias"));
  int8_form->addRow(QString(), bias_correction_);
  layout->addWidget(int8_);

  problem_ = new QLabel(this);
  problem_->setWordWrap(true);
  problem_->hide();
  layout->addWidget(problem_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Export"));
  connect(buttons, &QDialogButtonBox::accepted, this, &ExportDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);

  setValues(Values{});
  connect(data_type_, &QComboBox::currentIndexChanged, this, [this] {
    int8_->setEnabled(values().data_type == QStringLiteral("int8"));
    updateDefaultOutput();
  });
}

void ExportDialog::updateDefaultOutput() {
  if (output_edited_) return;
  const QString stem = QFileInfo(checkpoint_).completeBaseName() +
                       (values().data_type == QStringLiteral("int8") ? QStringLiteral("-int8")
                                                                     : QString());
  const QDir exports(QDir(run_dir_).filePath(QStringLiteral("export")));
  QString name = stem;
  for (int n = 2; exports.exists(name); ++n)
    name = stem + QStringLiteral("-%1").arg(n);
  output_->setText(exports.filePath(name));
}

ExportDialog::Values ExportDialog::values() const {
  Values v;
  v.data_type = data_type_->currentData().toString();
  v.cal_image_dir = cal_dir_->text().trimmed();
  v.cal_images = cal_images_->value();
  v.cal_range = cal_range_->currentData().toString();
  v.bias_correction = bias_correction_->isChecked();
  v.output_dir = output_->text().trimmed();
  return v;
}

void ExportDialog::setValues(const Values& v) {
  data_type_->setCurrentIndex(std::max(0, data_type_->findData(v.data_type)));
  cal_dir_->setText(v.cal_image_dir);
  cal_images_->setValue(v.cal_images);
  cal_range_->setCurrentIndex(std::max(0, cal_range_->findData(v.cal_range)));
  bias_correction_->setChecked(v.bias_correction);
  int8_->setEnabled(v.data_type == QStringLiteral("int8"));
  output_edited_ = !v.output_dir.isEmpty();
  if (output_edited_) {
    output_->setText(v.output_dir);
  } else {
    updateDefaultOutput();
  }
}

QStringList ExportDialog::engineArguments(const QString& checkpoint, const Values& v) {
  QStringList args{QStringLiteral("--checkpoint"), checkpoint,  QStringLiteral("--output-dir"),
                   v.output_dir,                   QStringLiteral("--data_type"), v.data_type};
  if (v.data_type != QStringLiteral("int8")) return args;
  if (!v.cal_image_dir.isEmpty()) args << QStringLiteral("--cal_image_dir") << v.cal_image_dir;
  args << QStringLiteral("--batches") << QString::number(v.cal_images)
       << QStringLiteral("--cal_range") << v.cal_range;
  if (!v.bias_correction) args << QStringLiteral("--bias_correction") << QStringLiteral("off");
  return args;
}

QString ExportDialog::problem(const Values& v) {
  if (v.output_dir.isEmpty()) return tr("Choose an output folder.");
  if (QFileInfo::exists(v.output_dir))
    return tr("%1 exists; an export never replaces what is there. Choose a new folder.")
        .arg(v.output_dir);
  if (v.data_type == QStringLiteral("int8") && !v.cal_image_dir.isEmpty() &&
      !QFileInfo(v.cal_image_dir).isDir()) {
    return tr("%1 is not a folder of calibration images.").arg(v.cal_image_dir);
  }
  return {};
}

QString ExportDialog::problemText() const {
  return problem_->isVisible() ? problem_->text() : QString();
}

void ExportDialog::accept() {
  const QString why = problem(values());
  problem_->setText(why);
  problem_->setVisible(!why.isEmpty());
  if (why.isEmpty()) QDialog::accept();
}

}  // namespace mrcnn::ui

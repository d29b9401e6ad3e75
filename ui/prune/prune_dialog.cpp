#include "ui/prune/prune_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace mrcnn::ui {

PruneDialog::PruneDialog(const QString& runDir, const QString& checkpoint, QWidget* parent)
    : QDialog(parent), run_dir_(runDir), checkpoint_(checkpoint) {
  setWindowTitle(tr("Prune %1").arg(QFileInfo(runDir).fileName()));
  auto* layout = new QVBoxLayout(this);
  auto* intro =
      new QLabel(tr("Removes the convolution filters whose normalised L2 norm is at or below the "
                    "threshold (TAO's rules). Weights: %1")
                     .arg(QDir::toNativeSeparators(checkpoint)),
                 this);
  intro->setWordWrap(true);
  layout->addWidget(intro);
  auto* form = new QFormLayout;
  threshold_ = new QDoubleSpinBox(this);
  threshold_->setRange(0.0, 1.0);
  threshold_->setDecimals(3);
  threshold_->setSingleStep(0.05);
  threshold_->setToolTip(tr("TAO -pth: filters scoring above it are kept"));
  form->addRow(tr("Pruning threshold"), threshold_);
  normalizer_ = new QComboBox(this);
  normalizer_->addItems({QStringLiteral("max"), QStringLiteral("L2")});
  normalizer_->setToolTip(tr("TAO -nm: a layer's norms divided by their largest or their L2 norm"));
  form->addRow(tr("Normalizer"), normalizer_);
  equalization_ = new QComboBox(this);
  equalization_->addItems({QStringLiteral("union"), QStringLiteral("intersection"),
                           QStringLiteral("arithmetic_mean"), QStringLiteral("geometric_mean")});
  equalization_->setToolTip(
      tr("TAO -eq: how the convolutions of a residual stage combine their scores"));
  form->addRow(tr("Equalization criterion"), equalization_);
  granularity_ = new QSpinBox(this);
  granularity_->setRange(1, 1024);
  granularity_->setToolTip(tr("TAO -pg: kept filters are a multiple of it"));
  form->addRow(tr("Pruning granularity"), granularity_);
  min_filters_ = new QSpinBox(this);
  min_filters_->setRange(1, 4096);
  min_filters_->setToolTip(tr("TAO -nf: the fewest filters a layer keeps"));
  form->addRow(tr("Minimum filters"), min_filters_);
  excluded_ = new QLineEdit(this);
  excluded_->setPlaceholderText(tr("e.g. backbone.body.layer4.0.conv1, rpn.head.conv.0.0"));
  excluded_->setToolTip(tr("TAO -el: layers kept whole, with their group"));
  form->addRow(tr("Excluded layers"), excluded_);
  output_ = new QLineEdit(this);
  output_->setToolTip(tr("A new or empty folder: model.pt and status.json go there"));
  connect(output_, &QLineEdit::textEdited, this, [this] { output_edited_ = true; });
  form->addRow(tr("Output folder"), output_);
  layout->addLayout(form);
  problem_ = new QLabel(this);
  problem_->setWordWrap(true);
  problem_->hide();
  layout->addWidget(problem_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Prune"));
  connect(buttons, &QDialogButtonBox::accepted, this, &PruneDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);

  setValues(Values{});
  connect(threshold_, &QDoubleSpinBox::valueChanged, this, &PruneDialog::updateDefaultOutput);
}

void PruneDialog::updateDefaultOutput() {
  if (output_edited_) return;
  const QString name = QFileInfo(checkpoint_).completeBaseName() + QStringLiteral("-pth") +
                       QString::number(threshold_->value(), 'g', 3);
  output_->setText(QDir(run_dir_).filePath(QStringLiteral("pruned/") + name));
}

PruneDialog::Values PruneDialog::values() const {
  Values v;
  v.threshold = threshold_->value();
  v.normalizer = normalizer_->currentText();
  v.equalization = equalization_->currentText();
  v.granularity = granularity_->value();
  v.min_filters = min_filters_->value();
  for (const QString& name : excluded_->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
    if (!name.trimmed().isEmpty()) v.excluded_layers << name.trimmed();
  v.output_dir = output_->text().trimmed();
  return v;
}

void PruneDialog::setValues(const Values& v) {
  threshold_->setValue(v.threshold);
  normalizer_->setCurrentText(v.normalizer);
  equalization_->setCurrentText(v.equalization);
  granularity_->setValue(v.granularity);
  min_filters_->setValue(v.min_filters);
  excluded_->setText(v.excluded_layers.join(QStringLiteral(", ")));
  output_edited_ = !v.output_dir.isEmpty();
  if (output_edited_) {
    output_->setText(v.output_dir);
  } else {
    updateDefaultOutput();
  }
}

QStringList PruneDialog::engineArguments(const QString& checkpoint, const Values& v) {
  QStringList args{QStringLiteral("--checkpoint"),
                   checkpoint,
                   QStringLiteral("--output-dir"),
                   v.output_dir,
                   QStringLiteral("--pruning-threshold"),
                   QString::number(v.threshold, 'g', 6),
                   QStringLiteral("--normalizer"),
                   v.normalizer,
                   QStringLiteral("--equalization-criterion"),
                   v.equalization,
                   QStringLiteral("--pruning-granularity"),
                   QString::number(v.granularity),
                   QStringLiteral("--min-num-filters"),
                   QString::number(v.min_filters)};
  if (!v.excluded_layers.isEmpty())
    args << QStringLiteral("--excluded-layers") << v.excluded_layers.join(QLatin1Char(','));
  return args;
}

QString PruneDialog::outputProblem(const QString& dir) {
  if (dir.isEmpty()) return tr("Choose an output folder.");
  const QFileInfo info(dir);
  if (!info.exists()) return {};
  if (!info.isDir()) return tr("%1 is a file; choose a new or empty folder.").arg(dir);
  if (!QDir(dir).isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden))
    return tr("%1 is not empty; a prune never replaces what is there. Choose a new or empty "
              "folder.")
        .arg(dir);
  return {};
}

QString PruneDialog::problemText() const {
  return problem_->isVisible() ? problem_->text() : QString();
}

void PruneDialog::accept() {
  const QString problem = outputProblem(values().output_dir);
  problem_->setText(problem);
  problem_->setVisible(!problem.isEmpty());
  if (problem.isEmpty()) QDialog::accept();
}

}  // namespace mrcnn::ui

#include "ui/prune/prune_result.h"

#include <google/protobuf/text_format.h>

#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPushButton>
#include <QSaveFile>
#include <QTableWidget>
#include <QVBoxLayout>

#include "specs/spec.h"
#include "ui/run_monitor/run_model.h"

namespace mrcnn::ui {

QString PruneStatus::summary() const {
  return QObject::tr("pruning ratio %1: %2 of %3 parameters (%4 MB), %5 of %6 GFLOPs")
      .arg(pruning_ratio, 0, 'f', 3)
      .arg(param_count)
      .arg(param_count_before)
      .arg(static_cast<double>(size) / 1e6, 0, 'f', 1)
      .arg(gflops, 0, 'f', 2)
      .arg(gflops_before, 0, 'f', 2);
}

std::optional<PruneStatus> readPruneStatus(const QString& dir, QString* error) {
  const QString path = QDir(dir).filePath(QStringLiteral("status.json"));
  QFile file(path);
  const auto fail = [&](const QString& why) -> std::optional<PruneStatus> {
    if (error) *error = path + QStringLiteral(": ") + why;
    return std::nullopt;
  };
  if (!file.open(QIODevice::ReadOnly)) return fail(file.errorString());
  QJsonParseError parse;
  const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &parse);
  if (doc.isNull())
    return fail(parse.errorString() + QStringLiteral(" at offset ") +
                QString::number(parse.offset));
  const QJsonObject o = doc.object();
  if (!o.contains(QStringLiteral("pruning_ratio")) || !o.value(QStringLiteral("layers")).isArray())
    return fail(QObject::tr("not a prune's status (no pruning_ratio or layers)"));
  PruneStatus s;
  s.dir = dir;
  s.weights = o.value(QStringLiteral("weights")).toString();
  s.pruning_ratio = o.value(QStringLiteral("pruning_ratio")).toDouble();
  s.param_count = o.value(QStringLiteral("param_count")).toInteger();
  s.size = o.value(QStringLiteral("size")).toInteger();
  s.gflops = o.value(QStringLiteral("gflops")).toDouble();
  const QJsonObject before = o.value(QStringLiteral("before")).toObject();
  s.param_count_before = before.value(QStringLiteral("param_count")).toInteger();
  s.gflops_before = before.value(QStringLiteral("gflops")).toDouble();
  s.threshold = o.value(QStringLiteral("options"))
                    .toObject()
                    .value(QStringLiteral("pruning_threshold"))
                    .toDouble();
  for (const QJsonValue& v : o.value(QStringLiteral("layers")).toArray()) {
    const QJsonObject l = v.toObject();
    s.layers.append({l.value(QStringLiteral("name")).toString(),
                     l.value(QStringLiteral("group")).toString(),
                     l.value(QStringLiteral("filters")).toInteger(),
                     l.value(QStringLiteral("kept")).toInteger(),
                     l.value(QStringLiteral("excluded")).toBool()});
  }
  return s;
}

QString sourceRunOf(const PruneStatus& status) {
  return runOfCheckpoint(status.weights);
}

QString writeRetrainSpec(const QString& runDir, const QString& pruneDir, QString* error) {
  const auto fail = [&](const QString& why) {
    if (error) *error = why;
    return QString();
  };
  const QString source = QDir(runDir).filePath(QStringLiteral("spec.txt"));
  QFile in(source);
  if (!in.open(QIODevice::ReadOnly)) return fail(source + QStringLiteral(": ") + in.errorString());
  spec::Experiment spec;
  if (!google::protobuf::TextFormat::ParseFromString(in.readAll().toStdString(), &spec))
    return fail(source + QObject::tr(": not a spec the workbench can read"));
  const QString model = QDir(pruneDir).absoluteFilePath(QStringLiteral("model.pt"));
  if (!QFileInfo::exists(model)) return fail(model + QObject::tr(": no pruned model there"));
  spec.set_pruned_model_path(model.toStdString());
  spec.clear_checkpoint();
  // A run directory of its own beside the pruned run's.
  const QDir runs = QFileInfo(runDir).absoluteDir();
  QString name = QFileInfo(runDir).fileName() + QStringLiteral("_retrain");
  for (int n = 2; runs.exists(name); ++n)
    name = QFileInfo(runDir).fileName() + QStringLiteral("_retrain-%1").arg(n);
  spec.set_run_name(name.toStdString());
  spec.set_output_dir(runs.absolutePath().toStdString());

  const QString path = QDir(pruneDir).filePath(QStringLiteral("retrain_spec.txt"));
  QSaveFile out(path);
  const QByteArray text =
      QStringLiteral(
          "# Retrains the model pruned from %1 (pruned_model_path); written by the "
          "workbench's prune\n")
          .arg(runDir)
          .toUtf8() +
      QByteArray::fromStdString(spec::printResolved(spec));
  if (!out.open(QIODevice::WriteOnly) || out.write(text) != text.size() || !out.commit())
    return fail(path + QStringLiteral(": ") + out.errorString());
  return path;
}

PruneResultDialog::PruneResultDialog(const QString& runDir, const PruneStatus& status,
                                     QWidget* parent)
    : QDialog(parent), run_dir_(runDir), status_(status) {
  setWindowTitle(
      tr("Pruned %1").arg(QFileInfo(runDir.isEmpty() ? status.weights : runDir).fileName()));
  auto* layout = new QVBoxLayout(this);
  summary_ = new QLabel(status.summary() + QStringLiteral("\n") +
                            tr("into %1").arg(QDir::toNativeSeparators(status.dir)),
                        this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(summary_);
  table_ = new QTableWidget(static_cast<int>(status.layers.size()), 4, this);
  table_->setHorizontalHeaderLabels({tr("Layer"), tr("Kept"), tr("Filters"), tr("Group")});
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  for (int r = 0; r < table_->rowCount(); ++r) {
    const PruneStatus::Layer& l = status.layers[r];
    const auto number = [](qint64 v) {
      auto* item = new QTableWidgetItem;
      item->setData(Qt::DisplayRole, v);
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      return item;
    };
    table_->setItem(r, 0, new QTableWidgetItem(l.name));
    table_->setItem(r, 1, number(l.kept));
    table_->setItem(r, 2, number(l.filters));
    table_->setItem(r, 3, new QTableWidgetItem(l.group == l.name ? QString() : l.group));
    if (l.excluded) table_->item(r, 0)->setToolTip(tr("excluded: kept whole"));
  }
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  // The network's order until a header is clicked (Qt would sort by the first column,
  // descending, as sorting is enabled).
  table_->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
  table_->setSortingEnabled(true);
  layout->addWidget(table_);
  problem_ = new QLabel(this);
  problem_->setWordWrap(true);
  problem_->hide();
  layout->addWidget(problem_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  QPushButton* retrain_button = buttons->addButton(tr("Retrain…"), QDialogButtonBox::ActionRole);
  retrain_button->setToolTip(
      tr("Write a spec that trains the pruned model (pruned_model_path) and open it"));
  connect(retrain_button, &QPushButton::clicked, this, &PruneResultDialog::retrain);
  if (runDir.isEmpty()) {  // weights from outside a run: no spec to retrain from
    retrain_button->setEnabled(false);
    retrain_button->setToolTip(
        tr("%1 is not in a run's checkpoints folder: retrain with a spec "
           "whose pruned_model_path is %2")
            .arg(status.weights, QDir(status.dir).absoluteFilePath(QStringLiteral("model.pt"))));
  }
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  resize(720, 560);
}

QString PruneResultDialog::summaryText() const {
  return summary_->text();
}

void PruneResultDialog::retrain() {
  QString error;
  const QString path = writeRetrainSpec(run_dir_, status_.dir, &error);
  problem_->setText(error);
  problem_->setVisible(path.isEmpty());
  if (path.isEmpty()) return;
  emit retrainSpecReady(path);
  accept();
}

}  // namespace mrcnn::ui

#include "ui/export/export_result.h"

#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QUrl>
#include <QVBoxLayout>

namespace mrcnn::ui {
namespace {

QJsonObject object(const QJsonObject& o, const char* key) {
  return o.value(QLatin1String(key)).toObject();
}

QString signedNumber(double v) {
  return (v >= 0 ? QStringLiteral("+") : QString()) + QString::number(v, 'f', 3);
}

// "LibTorch fp32 on cpu: 5.47 s, bbox AP 0.751, segm AP 0.631" for each run measured.
QStringList runLines(const QJsonArray& runs) {
  QStringList lines;
  for (const QJsonValue& v : runs) {
    const QJsonObject r = v.toObject();
    QString line = QStringLiteral("  %1: %2 s")
                       .arg(r.value(QStringLiteral("description")).toString())
                       .arg(r.value(QStringLiteral("seconds")).toDouble(), 0, 'f', 2);
    for (const char* kind : {"bbox", "segm"}) {
      const QJsonObject ap = object(r, kind);
      if (ap.contains(QStringLiteral("AP"))) {
        line += QStringLiteral(", %1 AP %2")
                    .arg(QLatin1String(kind))
                    .arg(ap.value(QStringLiteral("AP")).toDouble(), 0, 'f', 3);
      }
    }
    lines << line;
  }
  return lines;
}

}  // namespace

QString ExportReport::modelFile() const {
  const QString int8 = QDir(dir).filePath(QStringLiteral("model.int8.onnx"));
  if (json.contains(QStringLiteral("int8")) && QFileInfo::exists(int8)) return int8;
  return QDir(dir).filePath(QStringLiteral("model.onnx"));
}

QString ExportReport::summary() const {
  QStringList lines;
  const QJsonObject onnx = object(json, "onnx");
  lines << QObject::tr("%1: %2 nodes, opset %3; ONNX checker %4, shape inference %5")
               .arg(onnx.value(QStringLiteral("file")).toString())
               .arg(onnx.value(QStringLiteral("nodes")).toInteger())
               .arg(onnx.value(QStringLiteral("opset")).toInteger())
               .arg(onnx.value(QStringLiteral("checker")).toString(),
                    onnx.value(QStringLiteral("shape_inference")).toString());
  const QJsonObject parity = object(json, "parity");
  if (parity.contains(QStringLiteral("skipped"))) {
    lines << QObject::tr("Parity not checked: %1").arg(parity.value(QStringLiteral("skipped")).toString());
  } else if (parity.contains(QStringLiteral("unchecked"))) {
    lines << QObject::tr("Parity could not be checked: %1")
                 .arg(parity.value(QStringLiteral("unchecked")).toString());
  } else {
    lines << QObject::tr("Parity with the engine's inference: %1 of %2 detections agree (%3)")
                 .arg(parity.value(QStringLiteral("agreed")).toInteger())
                 .arg(parity.value(QStringLiteral("reference")).toInteger())
                 .arg(parity.value(QStringLiteral("passed")).toBool() ? QObject::tr("passed")
                                                                       : QObject::tr("failed"));
  }
  lines << runLines(parity.value(QStringLiteral("runs")).toArray());
  if (!json.contains(QStringLiteral("int8"))) return lines.join(QLatin1Char('\n'));

  const QJsonObject int8 = object(json, "int8");
  const QJsonObject cal = object(int8, "calibration");
  qsizetype quantised = 0;
  for (const Layer& l : layers)
    quantised += l.quantised ? 1 : 0;
  lines << QObject::tr("%1: %2 of %3 layers int8")
               .arg(int8.value(QStringLiteral("file")).toString())
               .arg(quantised)
               .arg(layers.size());
  QString calibration =
      QObject::tr("Calibration: %1 images%2, %3 ranges")
          .arg(cal.value(QStringLiteral("images")).toInteger())
          .arg(cal.value(QStringLiteral("reused")).toBool()
                   ? QObject::tr(" (from the cache %1)").arg(cal.value(QStringLiteral("cache")).toString())
                   : QString())
          .arg(cal.value(QStringLiteral("range")).toString());
  if (cal.contains(QStringLiteral("range_why")))
    calibration += QStringLiteral(" (") + cal.value(QStringLiteral("range_why")).toString() + ')';
  calibration += cal.value(QStringLiteral("bias_correction")).toBool()
                     ? QObject::tr("; %1 biases corrected")
                           .arg(cal.value(QStringLiteral("biases_corrected")).toInteger())
                     : QObject::tr("; biases as trained");
  lines << calibration;
  const QJsonObject agreement = object(int8, "agreement");
  if (agreement.contains(QStringLiteral("share"))) {
    lines << QObject::tr("int8 keeps %1 of fp32's %2 detections")
                 .arg(agreement.value(QStringLiteral("share")).toDouble(), 0, 'f', 2)
                 .arg(agreement.value(QStringLiteral("reference")).toInteger());
  }
  const QJsonObject delta = object(int8, "ap_delta");
  if (delta.contains(QStringLiteral("bbox"))) {
    lines << QObject::tr("int8 against fp32: bbox AP %1, segm AP %2")
                 .arg(signedNumber(delta.value(QStringLiteral("bbox")).toDouble()),
                      signedNumber(delta.value(QStringLiteral("segm")).toDouble()));
  }
  lines << runLines(int8.value(QStringLiteral("runs")).toArray());
  return lines.join(QLatin1Char('\n'));
}

std::optional<ExportReport> readExportReport(const QString& dir, QString* error) {
  const QString path = QDir(dir).filePath(QStringLiteral("export_report.json"));
  const auto fail = [&](const QString& why) -> std::optional<ExportReport> {
    if (error) *error = path + QStringLiteral(": ") + why;
    return std::nullopt;
  };
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return fail(file.errorString());
  QJsonParseError parse;
  const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &parse);
  if (doc.isNull())
    return fail(parse.errorString() + QStringLiteral(" at offset ") + QString::number(parse.offset));
  ExportReport r;
  r.dir = dir;
  r.json = doc.object();
  if (!r.json.value(QStringLiteral("onnx")).isObject())
    return fail(QObject::tr("not an export's report (no \"onnx\")"));
  for (const QJsonValue& v : object(r.json, "int8").value(QStringLiteral("layers")).toArray()) {
    const QJsonObject l = v.toObject();
    ExportReport::Layer layer;
    layer.weights = l.value(QStringLiteral("weights")).toString();
    layer.op = l.value(QStringLiteral("op")).toString();
    layer.quantised = l.value(QStringLiteral("quantised")).toBool();
    layer.why = l.value(QStringLiteral("why")).toString();
    if (l.contains(QStringLiteral("bias_shift")))
      layer.bias_shift_max = object(l, "bias_shift").value(QStringLiteral("max_abs")).toDouble();
    r.layers.append(layer);
  }
  return r;
}

ExportResultDialog::ExportResultDialog(const ExportReport& report, const QString& outcome,
                                       QWidget* parent)
    : QDialog(parent), report_(report) {
  setWindowTitle(tr("Exported %1").arg(QFileInfo(report.dir).fileName()));
  auto* layout = new QVBoxLayout(this);
  summary_ = new QLabel(outcome + QStringLiteral("\n") +
                            tr("Into %1").arg(QDir::toNativeSeparators(report.dir)) +
                            QStringLiteral("\n") + report.summary(),
                        this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(summary_);
  if (!report.layers.isEmpty()) {
    table_ = new QTableWidget(static_cast<int>(report.layers.size()), 4, this);
    table_->setHorizontalHeaderLabels({tr("Layer"), tr("Runs in"), tr("Bias shift"), tr("Why")});
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    for (int r = 0; r < table_->rowCount(); ++r) {
      const ExportReport::Layer& l = report.layers[r];
      table_->setItem(r, 0, new QTableWidgetItem(l.weights));
      table_->setItem(r, 1, new QTableWidgetItem(l.quantised ? tr("int8") : tr("float")));
      table_->setItem(r, 2, new QTableWidgetItem(l.bias_shift_max >= 0
                                                     ? QString::number(l.bias_shift_max, 'g', 3)
                                                     : QString()));
      auto* why = new QTableWidgetItem(l.why);
      why->setToolTip(l.why);
      table_->setItem(r, 3, why);
    }
    for (int c : {0, 1, 2})
      table_->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    layout->addWidget(table_);
  }
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  QPushButton* predictions =
      buttons->addButton(tr("Run in Predictions"), QDialogButtonBox::ActionRole);
  predictions->setToolTip(tr("Run %1 with OpenVINO in the Predictions view")
                              .arg(QFileInfo(report.modelFile()).fileName()));
  connect(predictions, &QPushButton::clicked, this, &ExportResultDialog::runInPredictions);
  QPushButton* folder = buttons->addButton(tr("Open Folder"), QDialogButtonBox::ActionRole);
  connect(folder, &QPushButton::clicked, this,
          [this] { QDesktopServices::openUrl(QUrl::fromLocalFile(report_.dir)); });
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  resize(860, 600);
}

QString ExportResultDialog::summaryText() const {
  return summary_->text();
}

void ExportResultDialog::runInPredictions() {
  emit predictionsRequested(report_.modelFile());
  accept();
}

}  // namespace mrcnn::ui

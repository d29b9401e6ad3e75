// What an export produced: its export_report.json read back and shown: the ONNX checks, the
// parity with the engine's own inference (each runtime's time and AP), and for int8 the
// calibration (images, ranges and why, biases corrected), the share of fp32's detections int8
// keeps, its AP cost, and every candidate layer with what was decided and why. "Run in
// Predictions" hands the exported model (int8 where there is one) to the Predictions view.
#pragma once

#include <QDialog>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <optional>

class QLabel;
class QTableWidget;

namespace mrcnn::ui {

struct ExportReport {
  struct Layer {
    QString weights, op;
    bool quantised = false;
    QString why;
    double bias_shift_max = -1;  // -1: bias not corrected
  };
  QString dir;  // the export's folder
  QJsonObject json;
  QList<Layer> layers;  // int8's candidates, in the graph's order (none for fp32)

  // The model a user runs: model.int8.onnx where the export made one, else model.onnx.
  QString modelFile() const;
  // Lines: the checks, the parity, int8's calibration and cost.
  QString summary() const;
};

// Reads <dir>/export_report.json; nullopt with the reason (naming the file) when it cannot.
std::optional<ExportReport> readExportReport(const QString& dir, QString* error = nullptr);

class ExportResultDialog : public QDialog {
  Q_OBJECT

 public:
  // `outcome`: how the export task ended (the Runs view's status line; a failed parity keeps
  // its report for inspection).
  ExportResultDialog(const ExportReport& report, const QString& outcome,
                     QWidget* parent = nullptr);

  QString summaryText() const;
  QTableWidget* layersTable() const { return table_; }  // null for an fp32 export
  // What "Run in Predictions" does (a test calls it).
  void runInPredictions();

 signals:
  void predictionsRequested(const QString& model);

 private:
  ExportReport report_;
  QLabel* summary_ = nullptr;
  QTableWidget* table_ = nullptr;
};

}  // namespace mrcnn::ui

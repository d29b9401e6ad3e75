// The analysis view: an evaluation's error analysis (a run's latest eval/*.json or any
// metrics file): a sortable per-class AP table; the selected class's precision-recall curves
// with a score threshold dragged along them, per class, saved as a thresholds file for
// inference (--thresholds); the confusion matrix with background, whose cells list the images
// behind them; TIDE's error bars; the images with the most errors. Images open in the
// Predictions view (imagesRequested) from the results file of the same images.
#pragma once

#include <QWidget>
#include <map>
#include <optional>

#include "ui/analysis/analysis_data.h"

class QComboBox;
class QLabel;
class QListWidget;
class QStandardItemModel;
class QTableView;
class QTableWidget;

namespace mrcnn::ui {

class ConfusionPlot;
class PrCurvePlot;
class TidePlot;

class AnalysisView : public QWidget {
  Q_OBJECT

 public:
  explicit AnalysisView(QWidget* parent = nullptr);
  ~AnalysisView() override;

  // Reads a metrics file; on failure the view keeps what it showed and says why (returned
  // in `error` too). The results file defaults to <run dir>/inference/results.json for a file
  // in <run dir>/eval.
  bool openMetrics(const QString& path, QString* error = nullptr);
  // A run directory's newest evaluation (eval/*.json); false when it has none.
  bool openRun(const QString& run_dir, QString* error = nullptr);
  // The detections the images open with (a results.json of the evaluated images).
  void setResults(const QString& results_json);
  QString results() const { return results_; }

  const AnalysisData* data() const { return data_ ? &*data_ : nullptr; }
  const TypeAnalysis* current() const;
  QString iouType() const;
  void setIouType(const QString& type);  // "bbox" or "segm"
  void selectClass(int64_t category_id);
  std::optional<int64_t> selectedClass() const;

  // The per-class thresholds in force for the current IoU type: the F1-best ones of the file,
  // as dragged since.
  std::map<int64_t, double> thresholds() const;
  void resetThresholds();
  // Writes the thresholds file inference reads (eval/class_thresholds.h).
  bool saveThresholds(const QString& path, QString* error = nullptr);

  QTableView* classTable() const { return class_table_; }
  PrCurvePlot* prPlot() const { return pr_plot_; }
  ConfusionPlot* confusionPlot() const { return confusion_plot_; }
  TidePlot* tidePlot() const { return tide_plot_; }
  QListWidget* cellImages() const { return cell_images_; }
  QTableWidget* errorImages() const { return error_images_; }
  QString statusText() const;

 public slots:
  // Lists a confusion cell's images (what clicking the heat map does).
  void showCell(int row, int column);

 signals:
  // Show these images (the first one first) in the Predictions view, from `results` over
  // `image_dir`, with `annotations` as the ground truth.
  void imagesRequested(const QList<qint64>& ids, const QString& caption, const QString& results,
                       const QString& image_dir, const QString& annotations);
  void metricsOpened(const QString& path);

 private:
  void showType();
  void fillClassTable();
  void fillErrorImages();
  void updateThresholdCells(int64_t category_id);
  void requestImages(QList<qint64> ids, const QString& caption);

  std::optional<AnalysisData> data_;
  std::map<QString, std::map<int64_t, double>> thresholds_;  // per IoU type
  QString results_;
  QString cell_caption_;
  QList<qint64> cell_ids_;

  QLabel* path_label_;
  QComboBox* type_box_;
  QLabel* results_label_;
  QLabel* status_;
  QStandardItemModel* class_model_;
  QTableView* class_table_;
  PrCurvePlot* pr_plot_;
  ConfusionPlot* confusion_plot_;
  TidePlot* tide_plot_;
  QLabel* cell_label_;
  QListWidget* cell_images_;
  QTableWidget* error_images_;
};

}  // namespace mrcnn::ui

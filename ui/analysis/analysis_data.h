// An evaluation's metrics file (the engine's --metrics-out, or a run's eval/*.json) read for
// the analysis view: per IoU type the 12 COCO numbers, per class AP, precision-recall curves
// with the score at each point and the F1-best threshold, the confusion matrix with the
// images behind each cell, TIDE's errors and the images with the most of them. Plain data,
// read without widgets.
#pragma once

#include <QHash>
#include <QList>
#include <QString>
#include <QVector>
#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

namespace mrcnn::ui {

struct ClassPoint {
  double score = 0;  // keep detections scoring at least this
  double precision = 0;
  double recall = 0;
};

struct ClassAnalysis {
  int64_t id = 0;
  QString name;      // from the file's category_names, else "class <id>"
  double ap = -1;    // AP@[.50:.95]; -1: no ground truth
  double ap50 = -1;  // mean of the .50 curve
  double ap75 = -1;
  int64_t ground_truth = 0;  // non-crowd objects (the confusion matrix's row)
  QVector<double> precision50, precision75, scores50;  // 101 recall points (0, .01, ..., 1)
  std::optional<ClassPoint> f1_best;

  // The curve's point a score threshold gives: the last recall point reached by detections
  // scoring at least `score`; none when no point is.
  std::optional<ClassPoint> pointAtScore(double score) const;
  // The point at recall index `r` (0..100) moved to the nearest reachable one; none when the
  // class has no true positive.
  std::optional<ClassPoint> pointNearRecall(int r) const;
};

inline constexpr int kTideTypes = 6;  // Cls, Loc, Both, Dupe, Bkg, Miss
extern const std::array<const char*, kTideTypes> kTideNames;

struct ErrorImage {
  int64_t image_id = 0;
  int64_t errors = 0;
  std::array<int64_t, kTideTypes> counts{};
};

struct TypeAnalysis {
  QString type;  // "bbox" or "segm"
  std::array<double, 12> stats{};
  std::vector<ClassAnalysis> classes;  // in category id order
  // Confusion matrix: (K + 1) x (K + 1) counts, rows ground truth (last: background), columns
  // predicted (last: missed); the images behind each cell by row * (K + 1) + column.
  std::vector<int64_t> confusion_ids;
  std::vector<int64_t> confusion;
  QHash<int, QList<qint64>> cell_images;
  double confusion_iou = 0.5, confusion_score = 0.5;
  // TIDE at IoU .5: dAP per type, the special dAP, counts, images with most errors first.
  bool has_tide = false;
  double tide_ap = 0;
  std::array<double, kTideTypes> tide_dap{};
  double false_positive_dap = 0, false_negative_dap = 0;
  std::array<int64_t, kTideTypes> tide_counts{};
  std::vector<ErrorImage> error_images;

  int confusionSize() const { return static_cast<int>(confusion_ids.size()) + 1; }
  int64_t confusionAt(int row, int column) const {
    return confusion[static_cast<size_t>(row * confusionSize() + column)];
  }
  // "circle", or "background" / "missed" for the last row / column.
  QString rowName(int row) const;
  QString columnName(int column) const;
};

struct AnalysisData {
  QString path;
  std::optional<TypeAnalysis> bbox, segm;
  QString annotations;  // the evaluated ground truth and images, where the file names them
  QString image_dir;
};

// A metrics file that cannot be used: the message names the file and the place in it.
class AnalysisError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws AnalysisError. A file of an older engine without the error analysis reads with
// empty curves, no confusion matrix and no TIDE.
AnalysisData readAnalysis(const QString& metrics_json);

}  // namespace mrcnn::ui

// One class's precision-recall curves (IoU .50 and .75, pycocotools' interpolated precision at
// 101 recall points) with a score threshold on the .50 curve that the mouse drags: the marker
// sits on the point the threshold gives, the readout says its score, precision and recall.
#pragma once

#include <optional>

#include "ui/analysis/analysis_data.h"
#include "ui/common/titled_plot.h"

namespace mrcnn::ui {

class PrCurvePlot : public TitledPlot {
  Q_OBJECT

 public:
  explicit PrCurvePlot(QWidget* parent = nullptr);

  // Shows the class's curves with the marker at `threshold` (none: no marker).
  void showClass(const ClassAnalysis* c, std::optional<double> threshold);
  // The point the marker is on, none without one.
  std::optional<ClassPoint> marker() const { return marker_; }
  QString readout() const;
  // Moves the marker to the recall point nearest `recall` (what a drag does).
  void dragTo(double recall);

 signals:
  // The class's threshold moved to `score` (by dragging).
  void thresholdDragged(int64_t category_id, double score);

 protected:
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  QColor applyPalette() override;

 private:
  void placeMarker();

  const ClassAnalysis* class_ = nullptr;
  std::optional<ClassPoint> marker_;
  QCPGraph* curve50_;
  QCPGraph* curve75_;
  QCPItemTracer* tracer_;
  QCPItemStraightLine* line_;
  QCPItemText* text_;
  bool dragging_ = false;
};

}  // namespace mrcnn::ui

// The confusion matrix with background as a heat map: rows the ground-truth class (last row:
// detections that matched nothing), columns the predicted class (last column: missed), each
// cell coloured by its share of its row, with its count written in when the classes are few.
// A click on a cell asks for the images behind it.
#pragma once

#include "ui/analysis/analysis_data.h"
#include "ui/common/titled_plot.h"

namespace mrcnn::ui {

class ConfusionPlot : public TitledPlot {
  Q_OBJECT

 public:
  explicit ConfusionPlot(QWidget* parent = nullptr);

  void showMatrix(const TypeAnalysis* t);
  // The cell at a widget position, (-1, -1) outside the matrix.
  QPoint cellAt(const QPointF& position) const;
  // Where a cell's centre is drawn (for tests and tooltips).
  QPointF cellCentre(int row, int column) const;

 signals:
  void cellClicked(int row, int column);

 protected:
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;

 private:
  const TypeAnalysis* matrix_ = nullptr;
  QCPColorMap* map_;
  QList<QCPItemText*> labels_;
};

}  // namespace mrcnn::ui

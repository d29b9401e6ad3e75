#include "ui/analysis/pr_curve_plot.h"

namespace mrcnn::ui {

PrCurvePlot::PrCurvePlot(QWidget* parent) : TitledPlot(tr("Precision-recall"), parent) {
  xAxis->setLabel(tr("recall"));
  yAxis->setLabel(tr("precision"));
  xAxis->setRange(0, 1);
  yAxis->setRange(0, 1.02);
  curve50_ = addGraph();
  curve50_->setName(tr("IoU .50"));
  curve50_->setPen(QPen(QColor(31, 119, 180), 2));
  curve75_ = addGraph();
  curve75_->setName(tr("IoU .75"));
  curve75_->setPen(QPen(QColor(255, 127, 14), 2, Qt::DashLine));
  legend->setVisible(true);
  axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignLeft);
  tracer_ = new QCPItemTracer(this);
  tracer_->setStyle(QCPItemTracer::tsCircle);
  tracer_->setSize(9);
  tracer_->setBrush(QColor(31, 119, 180));
  line_ = new QCPItemStraightLine(this);
  text_ = new QCPItemText(this);
  text_->setPositionAlignment(Qt::AlignTop | Qt::AlignRight);
  text_->position->setType(QCPItemPosition::ptAxisRectRatio);
  text_->position->setCoords(0.98, 0.03);
  text_->setPadding(QMargins(4, 2, 4, 2));
  setToolTip(tr("Drag along the curve to move this class's score threshold"));
  setMinimumSize(200, 150);
  applyPalette();
  placeMarker();
}

QColor PrCurvePlot::applyPalette() {
  const QColor grid = TitledPlot::applyPalette();
  legend->setBrush(palette().color(QPalette::Base));
  legend->setTextColor(palette().color(QPalette::Text));
  legend->setBorderPen(QPen(grid));
  line_->setPen(QPen(palette().color(QPalette::Text), 1, Qt::DotLine));
  text_->setColor(palette().color(QPalette::Text));
  text_->setBrush(palette().color(QPalette::Base));
  text_->setPen(QPen(grid));
  return grid;
}

void PrCurvePlot::showClass(const ClassAnalysis* c, std::optional<double> threshold) {
  class_ = c;
  const auto fill = [](QCPGraph* graph, const QVector<double>& precision) {
    QVector<double> x, y;
    for (int r = 0; r < precision.size(); ++r) {
      if (precision[r] < 0) continue;  // no ground truth
      x.append(r / 100.0);
      y.append(precision[r]);
    }
    graph->setData(x, y, true);
  };
  fill(curve50_, c ? c->precision50 : QVector<double>());
  fill(curve75_, c ? c->precision75 : QVector<double>());
  setTitle(c ? tr("Precision-recall: %1").arg(c->name) : tr("Precision-recall"));
  marker_.reset();
  if (c && threshold) marker_ = c->pointAtScore(*threshold);
  placeMarker();
}

void PrCurvePlot::placeMarker() {
  const bool shown = marker_.has_value();
  tracer_->setVisible(shown);
  line_->setVisible(shown);
  text_->setVisible(class_ != nullptr);
  if (shown) {
    tracer_->position->setCoords(marker_->recall, marker_->precision);
    line_->point1->setCoords(marker_->recall, 0);
    line_->point2->setCoords(marker_->recall, 1);
  }
  text_->setText(readout());
  replot(QCustomPlot::rpQueuedReplot);
}

QString PrCurvePlot::readout() const {
  if (!class_) return {};
  if (!marker_) return tr("no threshold (no true positive at IoU .50)");
  return tr("score ≥ %1\nprecision %2  recall %3")
      .arg(marker_->score, 0, 'f', 3)
      .arg(marker_->precision, 0, 'f', 3)
      .arg(marker_->recall, 0, 'f', 2);
}

void PrCurvePlot::dragTo(double recall) {
  if (!class_) return;
  const int r = std::clamp(static_cast<int>(std::lround(recall * 100)), 0, 100);
  const std::optional<ClassPoint> point = class_->pointNearRecall(r);
  if (!point) return;
  marker_ = point;
  placeMarker();
  emit thresholdDragged(class_->id, point->score);
}

void PrCurvePlot::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton && class_ &&
      axisRect()->rect().contains(event->position().toPoint())) {
    dragging_ = true;
    dragTo(xAxis->pixelToCoord(event->position().x()));
    return;
  }
  QCustomPlot::mousePressEvent(event);
}

void PrCurvePlot::mouseMoveEvent(QMouseEvent* event) {
  if (dragging_) {
    dragTo(xAxis->pixelToCoord(event->position().x()));
    return;
  }
  QCustomPlot::mouseMoveEvent(event);
}

void PrCurvePlot::mouseReleaseEvent(QMouseEvent* event) {
  dragging_ = false;
  QCustomPlot::mouseReleaseEvent(event);
}

}  // namespace mrcnn::ui

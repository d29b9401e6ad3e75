#include "ui/analysis/confusion_plot.h"

#include <QToolTip>

namespace mrcnn::ui {
namespace {

constexpr int kMaxLabelledSize = 16;  // counts are written into the cells up to this size

QSharedPointer<QCPAxisTickerText> namesTicker(const TypeAnalysis& t, bool rows) {
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  const int n = t.confusionSize();
  for (int i = 0; i < n; ++i)
    ticker->addTick(i, rows ? t.rowName(i) : t.columnName(i));
  return ticker;
}

}  // namespace

ConfusionPlot::ConfusionPlot(QWidget* parent)
    : TitledPlot(tr("Confusion (IoU .50, score ≥ .50)"), parent) {
  map_ = new QCPColorMap(xAxis, yAxis);
  map_->setInterpolate(false);
  // White for an empty share, deep blue for a whole row: counts stay readable on every cell.
  QCPColorGradient gradient;
  gradient.setColorStopAt(0, QColor(247, 251, 255));
  gradient.setColorStopAt(0.5, QColor(107, 174, 214));
  gradient.setColorStopAt(1, QColor(8, 48, 107));
  map_->setGradient(gradient);
  map_->setDataRange(QCPRange(0, 1));
  xAxis->setLabel(tr("predicted"));
  yAxis->setLabel(tr("ground truth"));
  yAxis->setRangeReversed(true);  // the first class on top
  xAxis->setTickLabelRotation(-40);
  for (QCPAxis* axis : {xAxis, yAxis}) {
    axis->grid()->setVisible(false);
    axis->setSubTicks(false);
  }
  setMouseTracking(true);
  setToolTip(tr("Click a cell to list the images behind it"));
  setMinimumSize(200, 160);
  applyPalette();
}

void ConfusionPlot::showMatrix(const TypeAnalysis* t) {
  matrix_ = t && !t->confusion.empty() ? t : nullptr;
  for (QCPItemText* label : labels_)
    removeItem(label);
  labels_.clear();
  if (!matrix_) {
    map_->data()->clear();
    map_->setVisible(false);
    setTitle(tr("Confusion: not in this metrics file"));
    replot();
    return;
  }
  const int n = matrix_->confusionSize();
  map_->setVisible(true);
  map_->data()->setSize(n, n);
  map_->data()->setRange(QCPRange(0, n - 1), QCPRange(0, n - 1));
  for (int row = 0; row < n; ++row) {
    int64_t total = 0;
    for (int col = 0; col < n; ++col)
      total += matrix_->confusionAt(row, col);
    for (int col = 0; col < n; ++col) {
      const int64_t count = matrix_->confusionAt(row, col);
      map_->data()->setCell(col, row, total > 0 ? static_cast<double>(count) / total : 0.0);
      if (n > kMaxLabelledSize) continue;
      auto* label = new QCPItemText(this);
      label->position->setCoords(col, row);
      label->setText(QString::number(count));
      const bool dark = total > 0 && static_cast<double>(count) / total > 0.55;
      label->setColor(dark ? Qt::white : Qt::black);
      labels_.append(label);
    }
  }
  xAxis->setTicker(namesTicker(*matrix_, false));
  yAxis->setTicker(namesTicker(*matrix_, true));
  xAxis->setRange(-0.5, n - 0.5);
  yAxis->setRange(-0.5, n - 0.5);
  setTitle(tr("Confusion (IoU %1, score ≥ %2), share of each row")
               .arg(matrix_->confusion_iou, 0, 'f', 2)
               .arg(matrix_->confusion_score, 0, 'f', 2));
  replot();
}

QPoint ConfusionPlot::cellAt(const QPointF& position) const {
  if (!matrix_ || !axisRect()->rect().contains(position.toPoint())) return {-1, -1};
  const int n = matrix_->confusionSize();
  const int col = static_cast<int>(std::lround(xAxis->pixelToCoord(position.x())));
  const int row = static_cast<int>(std::lround(yAxis->pixelToCoord(position.y())));
  if (row < 0 || row >= n || col < 0 || col >= n) return {-1, -1};
  return {col, row};
}

QPointF ConfusionPlot::cellCentre(int row, int column) const {
  return {xAxis->coordToPixel(column), yAxis->coordToPixel(row)};
}

void ConfusionPlot::mousePressEvent(QMouseEvent* event) {
  const QPoint cell = cellAt(event->position());
  if (event->button() == Qt::LeftButton && cell.x() >= 0) {
    emit cellClicked(cell.y(), cell.x());
    return;
  }
  QCustomPlot::mousePressEvent(event);
}

void ConfusionPlot::mouseMoveEvent(QMouseEvent* event) {
  const QPoint cell = cellAt(event->position());
  if (cell.x() >= 0) {
    const int row = cell.y(), col = cell.x();
    QToolTip::showText(
        event->globalPosition().toPoint(),
        tr("%1 → %2: %3 (%n image(s))", nullptr,
           static_cast<int>(
               matrix_->cell_images.value(row * matrix_->confusionSize() + col).size()))
            .arg(matrix_->rowName(row), matrix_->columnName(col))
            .arg(matrix_->confusionAt(row, col)),
        this);
  }
  QCustomPlot::mouseMoveEvent(event);
}

}  // namespace mrcnn::ui

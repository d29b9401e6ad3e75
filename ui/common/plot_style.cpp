#include "ui/common/plot_style.h"

#include <qcustomplot.h>

namespace mrcnn::ui {

QColor applyPlotPalette(QCustomPlot* plot, const QPalette& p) {
  const QColor base = p.color(QPalette::Base);
  const QColor text = p.color(QPalette::Text);
  QColor grid = text;
  grid.setAlpha(40);
  plot->setBackground(base);
  for (QCPAxisRect* rect : plot->axisRects()) {
    rect->setBackground(base);
    for (QCPAxis* axis : rect->axes()) {
      axis->setBasePen(QPen(text));
      axis->setTickPen(QPen(text));
      axis->setSubTickPen(QPen(text));
      axis->setTickLabelColor(text);
      axis->setLabelColor(text);
      axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
    }
  }
  return grid;
}

}  // namespace mrcnn::ui

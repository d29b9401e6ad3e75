#include "ui/common/titled_plot.h"

#include "ui/common/plot_style.h"

namespace mrcnn::ui {

TitledPlot::TitledPlot(const QString& title, QWidget* parent) : QCustomPlot(parent) {
  plotLayout()->insertRow(0);
  title_ = new QCPTextElement(this, title, QFont(font().family(), font().pointSize(), QFont::Bold));
  plotLayout()->addElement(0, 0, title_);
  applyPalette();  // a subclass colours its own items again in its constructor
}

QColor TitledPlot::applyPalette() {
  const QColor grid = applyPlotPalette(this, palette());
  title_->setTextColor(palette().color(QPalette::WindowText));
  return grid;
}

void TitledPlot::changeEvent(QEvent* event) {
  if (event->type() == QEvent::PaletteChange) {
    applyPalette();
    replot();
  }
  QCustomPlot::changeEvent(event);
}

}  // namespace mrcnn::ui

// The plots of the analysis and dataset views: a QCustomPlot with a bold title row, coloured
// from the palette and recoloured when the palette changes (light or dark theme).
#pragma once

#include <qcustomplot.h>

namespace mrcnn::ui {

class TitledPlot : public QCustomPlot {
  Q_OBJECT

 public:
  TitledPlot(const QString& title, QWidget* parent);

  void setTitle(const QString& title) { title_->setText(title); }
  QString title() const { return title_->text(); }

 protected:
  // Colours the axes, grid and title; a subclass colours its own items after calling it (and
  // calls it at the end of its constructor). Returns the grid colour.
  virtual QColor applyPalette();
  void changeEvent(QEvent* event) override;

 private:
  QCPTextElement* title_;
};

}  // namespace mrcnn::ui

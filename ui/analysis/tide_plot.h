// TIDE's error breakdown as bars: the AP points each main error type (Cls, Loc, Both, Dupe,
// Bkg, Miss) would give back if fixed, then the special FalsePos and FalseNeg, with the
// number of errors of each type.
#pragma once

#include "ui/analysis/analysis_data.h"
#include "ui/common/titled_plot.h"

namespace mrcnn::ui {

class TidePlot : public TitledPlot {
  Q_OBJECT

 public:
  explicit TidePlot(QWidget* parent = nullptr);

  void showErrors(const TypeAnalysis* t);
  // The bar values shown, main types then FalsePos, FalseNeg (empty without TIDE data).
  QVector<double> values() const { return values_; }

 protected:
  QColor applyPalette() override;  // the labels too

 private:
  QList<QCPBars*> bars_;
  QList<QCPItemText*> labels_;  // "dAP (errors)" beside each bar
  QVector<double> values_;
};

}  // namespace mrcnn::ui

#include "ui/analysis/tide_plot.h"

namespace mrcnn::ui {
namespace {

constexpr int kBars = kTideTypes + 2;

// One colour per error type, the special ones grey.
QColor barColour(int i) {
  static const QColor colours[kBars] = {
      QColor(214, 39, 40),  QColor(255, 127, 14), QColor(148, 103, 189), QColor(140, 86, 75),
      QColor(31, 119, 180), QColor(44, 160, 44),  QColor(127, 127, 127), QColor(127, 127, 127)};
  return colours[i];
}

}  // namespace

TidePlot::TidePlot(QWidget* parent) : TitledPlot(tr("TIDE errors"), parent) {
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (int i = 0; i < kTideTypes; ++i)
    ticker->addTick(i, QString::fromLatin1(kTideNames[static_cast<size_t>(i)]));
  ticker->addTick(kTideTypes + 0.5, u"FalsePos"_qs);
  ticker->addTick(kTideTypes + 1.5, u"FalseNeg"_qs);
  yAxis->setTicker(ticker);
  yAxis->setRangeReversed(true);
  yAxis->setRange(-0.6, kTideTypes + 2.1);
  yAxis->grid()->setVisible(false);
  yAxis->setSubTicks(false);
  xAxis->setLabel(tr("dAP at IoU .50 (AP points gained if fixed)"));
  for (int i = 0; i < kBars; ++i) {
    auto* bars = new QCPBars(yAxis, xAxis);
    bars->setWidth(0.7);
    bars->setPen(Qt::NoPen);
    bars->setBrush(barColour(i));
    bars_.append(bars);
  }
  setMinimumSize(200, 150);
  applyPalette();
}

QColor TidePlot::applyPalette() {
  const QColor grid = TitledPlot::applyPalette();
  for (QCPItemText* label : labels_)
    label->setColor(palette().color(QPalette::Text));
  return grid;
}

void TidePlot::showErrors(const TypeAnalysis* t) {
  values_.clear();
  for (QCPBars* bars : bars_)
    bars->data()->clear();
  for (QCPItemText* label : labels_)
    removeItem(label);
  labels_.clear();
  if (!t || !t->has_tide) {
    setTitle(tr("TIDE errors: not in this metrics file"));
    replot();
    return;
  }
  for (int i = 0; i < kTideTypes; ++i)
    values_.append(t->tide_dap[static_cast<size_t>(i)]);
  values_.append(t->false_positive_dap);
  values_.append(t->false_negative_dap);
  double top = 1;
  for (int i = 0; i < kBars; ++i) {
    const double key = i < kTideTypes ? i : i + 0.5;
    bars_[i]->addData(key, values_[i]);
    top = std::max(top, values_[i]);
    auto* label = new QCPItemText(this);
    label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    label->position->setAxes(xAxis, yAxis);
    label->position->setCoords(values_[i], key);
    label->setPadding(QMargins(4, 0, 0, 0));
    label->setColor(palette().color(QPalette::Text));
    label->setText(i < kTideTypes ? tr("%1 (%n error(s))", nullptr,
                                       static_cast<int>(t->tide_counts[static_cast<size_t>(i)]))
                                        .arg(values_[i], 0, 'f', 2)
                                  : QString::number(values_[i], 'f', 2));
    labels_.append(label);
  }
  xAxis->setRange(0, top * 1.35);  // room for the labels
  setTitle(tr("TIDE errors at IoU .50 (TIDE's AP %1)").arg(t->tide_ap, 0, 'f', 1));
  replot();
}

}  // namespace mrcnn::ui

#include "ui/run_monitor/run_plot.h"

#include <algorithm>
#include <cmath>

#include "ui/common/plot_style.h"
#include "ui/run_monitor/run_model.h"

namespace mrcnn::ui {

QVector<double> smoothEma(const QVector<double>& values, double weight) {
  if (weight <= 0) return values;
  QVector<double> out;
  out.reserve(values.size());
  double average = 0, correction = 1;
  for (double v : values) {
    if (!std::isfinite(v)) {  // a NaN loss stays visible as a gap rather than poisoning the rest
      out.append(v);
      continue;
    }
    average = weight * average + (1 - weight) * v;
    correction *= weight;
    out.append(average / (1 - correction));
  }
  return out;
}

RunPlot::RunPlot(PlotSpec spec, QWidget* parent) : QCustomPlot(parent), spec_(std::move(spec)) {
  setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  setNoAntialiasingOnDrag(true);
  plotLayout()->insertRow(0);
  title_ = new QCPTextElement(this, spec_.title,
                              QFont(font().family(), font().pointSize(), QFont::Bold));
  plotLayout()->addElement(0, 0, title_);
  xAxis->setLabel(QStringLiteral("step"));
  tracer_ = new QCPItemTracer(this);
  tracer_->setStyle(QCPItemTracer::tsCircle);
  tracer_->setSize(7);
  tracer_->setVisible(false);
  readout_ = new QCPItemText(this);
  readout_->setPositionAlignment(Qt::AlignTop | Qt::AlignRight);
  readout_->position->setType(QCPItemPosition::ptAxisRectRatio);
  readout_->position->setCoords(0.98, 0.03);
  readout_->setTextAlignment(Qt::AlignLeft);
  readout_->setPadding(QMargins(4, 2, 4, 2));
  readout_->setVisible(false);
  setMinimumSize(260, 180);
  applyPalette(palette());
}

void RunPlot::applyPalette(const QPalette& p) {
  const QColor base = p.color(QPalette::Base);
  text_colour_ = p.color(QPalette::Text);
  const QColor grid = applyPlotPalette(this, p);
  title_->setTextColor(p.color(QPalette::WindowText));
  tracer_->setPen(QPen(text_colour_));
  readout_->setColor(text_colour_);
  QColor box = base;
  box.setAlpha(220);
  readout_->setBrush(box);
  readout_->setPen(QPen(grid));
}

void RunPlot::setRuns(const QVector<PlotRun>& runs) {
  runs_ = runs;
  tracer_->setGraph(nullptr);
  clearGraphs();
  curves_.clear();
  for (int r = 0; r < runs_.size(); ++r) {
    for (int k = 0; k < spec_.keys.size(); ++k) {
      Curve c;
      c.run = r;
      c.key = k;
      c.raw = addGraph();
      c.smoothed = addGraph();
      curves_.append(c);
    }
  }
  styleCurves();
}

bool RunPlot::perEvaluation(const Curve& c) const {
  return spec_.second_per_evaluation && c.key == 1;
}

bool RunPlot::smoothable(const Curve& c) const {
  return spec_.smoothable && !perEvaluation(c);
}

void RunPlot::styleCurves() {
  for (const Curve& c : curves_) {
    const QColor colour = runs_[c.run].colour;
    const Qt::PenStyle style = c.key == 0 ? Qt::SolidLine : Qt::DashLine;
    QColor faint = colour;
    faint.setAlpha(70);
    c.raw->setPen(QPen(faint, 1, style));
    c.raw->setVisible(smoothing_ > 0 && smoothable(c));
    c.smoothed->setPen(QPen(colour, 1.6, style));
    c.smoothed->setScatterStyle(spec_.markers || perEvaluation(c)
                                    ? QCPScatterStyle(QCPScatterStyle::ssDisc, 4)
                                    : QCPScatterStyle());
  }
}

void RunPlot::setSmoothing(double weight) {
  smoothing_ = weight;
  styleCurves();
}

void RunPlot::setLogScale(bool on) {
  log_scale_ = on && spec_.loggable;
  if (log_scale_) {
    yAxis->setScaleType(QCPAxis::stLogarithmic);
    yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    yAxis->setNumberFormat(QStringLiteral("eb"));
    yAxis->setNumberPrecision(0);
  } else {
    yAxis->setScaleType(QCPAxis::stLinear);
    yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    yAxis->setNumberFormat(QStringLiteral("gb"));
    yAxis->setNumberPrecision(6);
  }
}

void RunPlot::refresh() {
  for (const Curve& c : curves_) {
    const RunModel* model = runs_[c.run].model;
    const Series* s = model ? model->series(spec_.keys[c.key]) : nullptr;
    if (!s) {
      c.raw->data()->clear();
      c.smoothed->data()->clear();
      continue;
    }
    const bool smooth = smoothing_ > 0 && smoothable(c);
    if (c.raw->visible())
      c.raw->setData(s->steps, s->values, /*alreadySorted=*/true);
    else
      c.raw->data()->clear();
    c.smoothed->setData(s->steps, smooth ? smoothEma(s->values, smoothing_) : s->values, true);
  }
  updateRanges();
  // The caller throttles refreshes to a timer: draw now rather than queue another event.
  replot();
}

void RunPlot::updateRanges() {
  if (user_view_) return;
  bool any = false;
  QCPRange x, y;
  for (const Curve& c : curves_) {
    for (QCPGraph* g : {c.raw, c.smoothed}) {
      if (!g->visible() || g->data()->isEmpty()) continue;
      bool found = false;
      const QCPRange gx = g->getKeyRange(found);
      if (!found) continue;
      const QCPRange gy = g->getValueRange(found, QCP::sdBoth);
      if (!found) continue;
      if (!any) {
        x = gx;
        y = gy;
        any = true;
      } else {
        x.expand(gx);
        y.expand(gy);
      }
    }
  }
  if (!any) return;
  // Every plot spans the runs' steps from 0, so that an evaluation every few hundred steps
  // (one point early on) lines up with the losses above it instead of filling a plot alone.
  for (const PlotRun& r : runs_)
    if (r.model) x.upper = std::max(x.upper, r.model->step());
  x.lower = std::min(x.lower, 0.0);
  if (x.size() <= 0) x = QCPRange(x.lower - 1, x.upper + 1);
  xAxis->setRange(x);
  if (log_scale_) {
    if (y.lower <= 0) y.lower = y.upper > 0 ? y.upper * 1e-4 : 1e-6;
    yAxis->setRange(y.lower / 1.3, y.upper * 1.3);
  } else {
    // mAP reads against 0 (an AP of 0.02 is not "high" because it is the only point).
    if (spec_.markers) y.lower = std::min(y.lower, 0.0);
    const double pad = y.size() > 0 ? y.size() * 0.06 : std::max(std::abs(y.upper) * 0.1, 1e-3);
    yAxis->setRange(y.lower - pad, y.upper + pad);
  }
}

void RunPlot::resetView() {
  user_view_ = false;
  updateRanges();
  replot(QCustomPlot::rpQueuedReplot);
}

bool RunPlot::hasData() const {
  for (const Curve& c : curves_)
    if (!c.smoothed->data()->isEmpty()) return true;
  return false;
}

QVector<QPointF> RunPlot::drawnPoints(int run, int key) const {
  QVector<QPointF> points;
  for (const Curve& c : curves_) {
    if (c.run != run || c.key != key) continue;
    for (auto it = c.smoothed->data()->constBegin(); it != c.smoothed->data()->constEnd(); ++it)
      points.append(QPointF(it->key, it->value));
  }
  return points;
}

QString RunPlot::readoutAt(double step) const {
  QStringList lines;
  double shown_step = std::nan("");
  for (const Curve& c : curves_) {
    const auto points = c.smoothed->data();
    if (points->isEmpty()) continue;
    // The point nearest to `step`.
    auto it = points->findBegin(step, /*expandedRange=*/false);
    if (it == points->constEnd()) --it;
    if (it != points->constBegin()) {
      auto before = it - 1;
      if (std::abs(before->key - step) < std::abs(it->key - step)) it = before;
    }
    if (std::isnan(shown_step)) shown_step = it->key;
    QString label = runs_.size() > 1 ? runs_[c.run].name : QString();
    if (spec_.keys.size() > 1) {
      const QString key =
          c.key < spec_.labels.size() ? spec_.labels[c.key] : spec_.keys[c.key].section('_', -1);
      label = label.isEmpty() ? key : label + " " + key;
    }
    const QString value = QString::number(it->value, 'g', 5);
    QString line = label.isEmpty() ? value : QStringLiteral("%1: %2").arg(label, value);
    // Runs logged at other steps say where their nearest point is.
    if (it->key != shown_step) line += QStringLiteral(" (step %1)").arg(it->key);
    lines.append(line);
  }
  if (lines.isEmpty()) return {};
  lines.prepend(QStringLiteral("step %1").arg(shown_step));
  return lines.join('\n');
}

void RunPlot::mouseMoveEvent(QMouseEvent* event) {
  QCustomPlot::mouseMoveEvent(event);
  if (event->buttons() != Qt::NoButton) {
    user_view_ = true;  // a drag
    return;
  }
  if (!axisRect()->rect().contains(event->pos()) || curves_.isEmpty()) {
    tracer_->setVisible(false);
    readout_->setVisible(false);
    replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  const double step = xAxis->pixelToCoord(event->pos().x());
  const QString text = readoutAt(step);
  readout_->setText(text);
  readout_->setVisible(!text.isEmpty());
  for (const Curve& c : curves_) {
    if (c.smoothed->data()->isEmpty()) continue;
    tracer_->setGraph(c.smoothed);
    tracer_->setGraphKey(step);
    tracer_->setInterpolating(false);
    tracer_->setVisible(true);
    break;
  }
  replot(QCustomPlot::rpQueuedReplot);
}

void RunPlot::leaveEvent(QEvent* event) {
  QCustomPlot::leaveEvent(event);
  tracer_->setVisible(false);
  readout_->setVisible(false);
  replot(QCustomPlot::rpQueuedReplot);
}

void RunPlot::mouseDoubleClickEvent(QMouseEvent* event) {
  QCustomPlot::mouseDoubleClickEvent(event);
  resetView();
}

void RunPlot::wheelEvent(QWheelEvent* event) {
  user_view_ = true;
  QCustomPlot::wheelEvent(event);
}

}  // namespace mrcnn::ui

#include "ui/dataset_browser/dataset_stats_view.h"

#include <QGridLayout>
#include <QLabel>
#include <QListWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "ui/common/titled_plot.h"

namespace mrcnn::ui {
namespace {

constexpr int kClassesShown = 30;

QString edgeText(double v) {
  if (std::isinf(v)) return v > 0 ? QStringLiteral("∞") : QStringLiteral("-∞");
  return QString::number(v);
}

// A bar per (label, count), in that order.
void showBars(TitledPlot* plot, const QStringList& labels, const QVector<double>& counts) {
  plot->clearPlottables();
  auto* bars = new QCPBars(plot->xAxis, plot->yAxis);
  bars->setPen(Qt::NoPen);
  bars->setBrush(QColor(31, 119, 180));
  bars->setWidth(0.75);
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  QVector<double> keys;
  double top = 1;
  for (int i = 0; i < counts.size(); ++i) {
    keys.append(i);
    ticker->addTick(i, labels.value(i));
    top = std::max(top, counts[i]);
  }
  bars->setData(keys, counts, true);
  plot->xAxis->setTicker(ticker);
  plot->xAxis->setTickLabelRotation(labels.size() > 8 ? -60 : 0);
  plot->xAxis->setRange(-0.6, std::max(1.0, counts.size() - 0.4));
  plot->yAxis->setRange(0, top * 1.1);
  plot->replot();
}

// Bin labels "a–b" of a histogram.
QStringList binLabels(const dataset::Histogram& h) {
  QStringList out;
  for (size_t i = 0; i + 1 < h.edges.size(); ++i)
    out << edgeText(h.edges[i]) + u'–' + edgeText(h.edges[i + 1]);
  return out;
}

QVector<double> counts(const dataset::Histogram& h) {
  QVector<double> out;
  for (int64_t c : h.counts)
    out.append(static_cast<double>(c));
  return out;
}

}  // namespace

DatasetStatsView::DatasetStatsView(QWidget* parent) : QWidget(parent) {
  auto* grid = new QGridLayout;
  const QStringList titles = {tr("Instances per class"), tr("Object size (√area, pixels)"),
                              tr("Aspect ratio (log2 width / height)"), tr("Instances per image")};
  for (int i = 0; i < titles.size(); ++i) {
    auto* plot = new TitledPlot(titles[i], this);
    plot->setMinimumSize(220, 160);
    plot->yAxis->grid()->setVisible(true);
    plot->xAxis->grid()->setVisible(false);
    charts_.push_back(plot);
    grid->addWidget(plot, i / 2, i % 2);
  }
  coverage_ = new QLabel(this);
  coverage_->setWordWrap(true);
  problems_ = new QListWidget(this);
  problems_->setWordWrap(true);
  problems_->setMaximumHeight(140);
  auto* column = new QVBoxLayout(this);
  column->addLayout(grid, 1);
  column->addWidget(coverage_);
  column->addWidget(new QLabel(tr("Problems found"), this));
  column->addWidget(problems_);
}

void DatasetStatsView::showStats(const dataset::SetStats* s,
                                 const std::vector<dataset::Problem>& problems,
                                 const QString& anchors) {
  problems_->clear();
  if (!s) {
    for (TitledPlot* plot : charts_)
      showBars(plot, {}, {});
    coverage_->clear();
    return;
  }
  std::vector<const dataset::ClassCounts*> classes;
  for (const dataset::ClassCounts& c : s->classes)
    classes.push_back(&c);
  std::stable_sort(classes.begin(), classes.end(),
                   [](const auto* a, const auto* b) { return a->instances > b->instances; });
  QStringList names;
  QVector<double> instances;
  for (size_t i = 0; i < classes.size() && i < static_cast<size_t>(kClassesShown); ++i) {
    names << QString::fromStdString(classes[i]->name);
    instances.append(static_cast<double>(classes[i]->instances));
  }
  showBars(charts_[0], names, instances);
  charts_[0]->setTitle(
      classes.size() > static_cast<size_t>(kClassesShown)
          ? tr("Instances per class (the %1 largest of %2; imbalance %3×)")
                .arg(kClassesShown)
                .arg(classes.size())
                .arg(s->imbalance, 0, 'f', 1)
          : tr("Instances per class (imbalance %1×)").arg(s->imbalance, 0, 'f', 1));
  showBars(charts_[1], binLabels(s->sqrt_area), counts(s->sqrt_area));
  showBars(charts_[2], binLabels(s->aspect), counts(s->aspect));
  showBars(charts_[3], binLabels(s->instances_per_image), counts(s->instances_per_image));
  const dataset::AnchorCoverage& a = s->anchors;
  coverage_->setText(tr("Anchor coverage with %6: %1% of the boxes have an anchor at IoU ≥ %2 "
                        "(small %3%, medium %4%, large %5%).")
                         .arg(100 * a.share_all, 0, 'f', 1)
                         .arg(a.positive_iou, 0, 'f', 2)
                         .arg(100 * a.share[0], 0, 'f', 1)
                         .arg(100 * a.share[1], 0, 'f', 1)
                         .arg(100 * a.share[2], 0, 'f', 1)
                         .arg(anchors));
  for (const dataset::Problem& p : problems)
    problems_->addItem(QString::fromStdString("[" + p.code + "] " + p.message));
  if (problems.empty()) problems_->addItem(tr("none"));
}

QVector<double> DatasetStatsView::bars(int chart) const {
  QVector<double> out;
  if (chart < 0 || chart >= static_cast<int>(charts_.size())) return out;
  if (auto* b = qobject_cast<QCPBars*>(charts_[static_cast<size_t>(chart)]->plottable(0)))
    for (auto it = b->data()->constBegin(); it != b->data()->constEnd(); ++it)
      out.append(it->value);
  return out;
}

QString DatasetStatsView::coverageText() const {
  return coverage_->text();
}

}  // namespace mrcnn::ui

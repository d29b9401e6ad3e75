// The dataset check of the file being browsed (dataset/stats/dataset_stats.h), as the
// Statistics tab of the dataset view: instances per class, object sizes (sqrt of the area),
// aspect ratios and instances per image as bar charts, the anchor coverage with the default
// anchors, and the problems found.
#pragma once

#include <QVector>
#include <QWidget>
#include <vector>

#include "dataset/stats/dataset_stats.h"

class QLabel;
class QListWidget;

namespace mrcnn::ui {

class TitledPlot;

class DatasetStatsView : public QWidget {
  Q_OBJECT

 public:
  explicit DatasetStatsView(QWidget* parent = nullptr);

  // Shows a set's statistics and the problems (null: clears); `anchors` names the anchors its
  // coverage was computed with.
  void showStats(const dataset::SetStats* stats, const std::vector<dataset::Problem>& problems,
                 const QString& anchors);

  // The bars of each chart, for tests: classes (most instances first), sizes, aspects, per image.
  QVector<double> bars(int chart) const;
  QListWidget* problems() const { return problems_; }
  QString coverageText() const;

 private:
  std::vector<TitledPlot*> charts_;
  QLabel* coverage_;
  QListWidget* problems_;
};

}  // namespace mrcnn::ui

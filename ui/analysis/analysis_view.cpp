#include "ui/analysis/analysis_view.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSaveFile>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>

#include "eval/class_thresholds.h"
#include "ui/analysis/confusion_plot.h"
#include "ui/analysis/pr_curve_plot.h"
#include "ui/analysis/tide_plot.h"

namespace mrcnn::ui {
namespace {

enum Column { kName, kObjects, kAp, kAp50, kAp75, kThreshold, kPrecision, kRecall, kColumns };
constexpr int kSortRole = Qt::UserRole;
constexpr int kIdRole = Qt::UserRole + 1;

// A cell that shows `text` and sorts by `value`.
QStandardItem* cell(const QString& text, double value) {
  auto* item = new QStandardItem(text);
  item->setData(value, kSortRole);
  item->setEditable(false);
  if (value == value) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

QString ap(double v) {
  return v < 0 ? QStringLiteral("–") : QString::number(v, 'f', 3);
}

QTableWidgetItem* numberItem(qlonglong v) {
  auto* item = new QTableWidgetItem;
  item->setData(Qt::DisplayRole, v);
  return item;
}

}  // namespace

AnalysisView::AnalysisView(QWidget* parent) : QWidget(parent) {
  auto* open = new QPushButton(tr("Open Metrics…"), this);
  connect(open, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Evaluation metrics"), QString(),
                                                      tr("Metrics (*.json);;All files (*)"));
    if (!path.isEmpty()) openMetrics(path);
  });
  path_label_ = new QLabel(tr("No evaluation open"), this);
  path_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  type_box_ = new QComboBox(this);
  connect(type_box_, &QComboBox::currentIndexChanged, this, [this] { showType(); });
  auto* results = new QPushButton(tr("Results…"), this);
  results->setToolTip(tr("The results.json of the evaluated images, which images open with"));
  connect(results, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Results of the evaluated images"),
                                                      results_, tr("Results (*.json)"));
    if (!path.isEmpty()) setResults(path);
  });
  results_label_ = new QLabel(this);
  auto* reset = new QPushButton(tr("Reset Thresholds"), this);
  reset->setToolTip(tr("Back to each class's F1-best score threshold"));
  connect(reset, &QPushButton::clicked, this, &AnalysisView::resetThresholds);
  auto* save = new QPushButton(tr("Save Thresholds…"), this);
  save->setToolTip(tr("Write the per-class thresholds for inference (--thresholds FILE)"));
  connect(save, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Save per-class thresholds"), u"thresholds.json"_qs, tr("Thresholds (*.json)"));
    if (!path.isEmpty()) saveThresholds(path);
  });
  auto* bar = new QHBoxLayout;
  bar->addWidget(open);
  bar->addWidget(path_label_, 1);
  bar->addWidget(new QLabel(tr("IoU type"), this));
  bar->addWidget(type_box_);
  bar->addWidget(results);
  bar->addWidget(results_label_);
  bar->addWidget(reset);
  bar->addWidget(save);

  class_model_ = new QStandardItemModel(0, kColumns, this);
  class_model_->setHorizontalHeaderLabels({tr("Class"), tr("Objects"), tr("AP"), tr("AP50"),
                                           tr("AP75"), tr("Threshold"), tr("Precision"),
                                           tr("Recall")});
  class_model_->setSortRole(kSortRole);
  class_table_ = new QTableView(this);
  class_table_->setModel(class_model_);
  class_table_->setSortingEnabled(true);
  class_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  class_table_->setSelectionMode(QAbstractItemView::SingleSelection);
  class_table_->verticalHeader()->hide();
  class_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  connect(class_table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] {
    const TypeAnalysis* t = current();
    const std::optional<int64_t> id = selectedClass();
    if (!t || !id) return;
    for (const ClassAnalysis& c : t->classes) {
      if (c.id != *id) continue;
      const auto& chosen = thresholds_[t->type];
      const auto it = chosen.find(c.id);
      pr_plot_->showClass(&c,
                          it != chosen.end() ? std::optional<double>(it->second) : std::nullopt);
    }
  });

  error_images_ = new QTableWidget(0, 2 + kTideTypes, this);
  QStringList headers{tr("Image"), tr("Errors")};
  for (const char* name : kTideNames)
    headers << QString::fromLatin1(name);
  error_images_->setHorizontalHeaderLabels(headers);
  error_images_->verticalHeader()->hide();
  error_images_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  error_images_->setSelectionBehavior(QAbstractItemView::SelectRows);
  error_images_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  error_images_->setToolTip(tr("Double-click an image to open it in Predictions"));
  connect(error_images_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
    const qint64 id = error_images_->item(row, 0)->data(Qt::DisplayRole).toLongLong();
    requestImages({id}, tr("image %1: %2 TIDE errors")
                            .arg(id)
                            .arg(error_images_->item(row, 1)->data(Qt::DisplayRole).toLongLong()));
  });

  pr_plot_ = new PrCurvePlot(this);
  connect(pr_plot_, &PrCurvePlot::thresholdDragged, this, [this](int64_t id, double score) {
    if (const TypeAnalysis* t = current()) thresholds_[t->type][id] = score;
    updateThresholdCells(id);
  });
  tide_plot_ = new TidePlot(this);
  confusion_plot_ = new ConfusionPlot(this);
  connect(confusion_plot_, &ConfusionPlot::cellClicked, this, &AnalysisView::showCell);
  cell_label_ = new QLabel(tr("Click a cell of the confusion matrix to list its images"), this);
  cell_label_->setWordWrap(true);
  cell_images_ = new QListWidget(this);
  cell_images_->setToolTip(tr("Double-click to open the cell's images in Predictions"));
  connect(cell_images_, &QListWidget::itemDoubleClicked, this, [this](QListWidgetItem* item) {
    QList<qint64> ids = cell_ids_;
    const qint64 first = item->data(Qt::UserRole).toLongLong();
    ids.removeAll(first);
    ids.prepend(first);
    requestImages(ids, cell_caption_);
  });
  auto* open_cell = new QPushButton(tr("Open in Predictions"), this);
  connect(open_cell, &QPushButton::clicked, this,
          [this] { requestImages(cell_ids_, cell_caption_); });
  auto* cell_box = new QWidget(this);
  auto* cell_layout = new QVBoxLayout(cell_box);
  cell_layout->setContentsMargins(0, 0, 0, 0);
  cell_layout->addWidget(cell_label_);
  cell_layout->addWidget(cell_images_, 1);
  cell_layout->addWidget(open_cell);

  auto* left = new QSplitter(Qt::Vertical, this);
  left->addWidget(class_table_);
  auto* errors_box = new QWidget(this);
  auto* errors_layout = new QVBoxLayout(errors_box);
  errors_layout->setContentsMargins(0, 0, 0, 0);
  errors_layout->addWidget(new QLabel(tr("Images with the most TIDE errors"), this));
  errors_layout->addWidget(error_images_, 1);
  left->addWidget(errors_box);
  auto* top = new QSplitter(this);
  top->addWidget(pr_plot_);
  top->addWidget(tide_plot_);
  top->setSizes({520, 480});
  auto* bottom = new QSplitter(this);
  bottom->addWidget(confusion_plot_);
  bottom->addWidget(cell_box);
  bottom->setStretchFactor(0, 3);
  bottom->setStretchFactor(1, 1);
  auto* right = new QSplitter(Qt::Vertical, this);
  right->addWidget(top);
  right->addWidget(bottom);
  auto* main = new QSplitter(this);
  main->addWidget(left);
  main->addWidget(right);
  main->setStretchFactor(0, 2);
  main->setStretchFactor(1, 3);
  main->setSizes({560, 1000});

  status_ = new QLabel(tr("Open a metrics file (an evaluation's --metrics-out, a run's "
                          "eval/*.json), or a run in Runs."),
                       this);
  status_->setWordWrap(true);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(main, 1);
  layout->addWidget(status_);
}

AnalysisView::~AnalysisView() = default;

bool AnalysisView::openMetrics(const QString& path, QString* error) {
  try {
    data_ = readAnalysis(path);
  } catch (const std::exception& e) {
    const QString why = QString::fromUtf8(e.what());
    status_->setText(tr("Cannot open the metrics: %1").arg(why));
    if (error) *error = why;
    return false;
  }
  thresholds_.clear();
  for (const auto* t :
       {data_->bbox ? &*data_->bbox : nullptr, data_->segm ? &*data_->segm : nullptr}) {
    if (!t) continue;
    auto& chosen = thresholds_[t->type];
    for (const ClassAnalysis& c : t->classes)
      if (c.f1_best) chosen[c.id] = c.f1_best->score;
  }
  path_label_->setText(QDir::toNativeSeparators(path));
  // A run's evaluation: the run's inference over the validation images, where there is one.
  const QFileInfo info(path);
  for (const QString& candidate :
       {info.dir().filePath(u"results.json"_qs),
        info.dir().dirName() == u"eval"_qs
            ? QDir(info.dir().filePath(u".."_qs)).filePath(u"inference/results.json"_qs)
            : QString()}) {
    if (!candidate.isEmpty() && QFileInfo::exists(candidate)) {
      setResults(QDir::cleanPath(candidate));
      break;
    }
  }
  {
    const QSignalBlocker block(type_box_);
    type_box_->clear();
    if (data_->segm) type_box_->addItem(u"segm"_qs);
    if (data_->bbox) type_box_->addItem(u"bbox"_qs);
  }
  showType();
  emit metricsOpened(path);
  return true;
}

bool AnalysisView::openRun(const QString& run_dir, QString* error) {
  const QFileInfoList files = QDir(QDir(run_dir).filePath(u"eval"_qs))
                                  .entryInfoList({u"*.json"_qs}, QDir::Files, QDir::Time);
  for (const QFileInfo& f : files) {
    if (f.fileName().endsWith(u".openvino.json"_qs)) continue;  // LibTorch's numbers first
    return openMetrics(f.absoluteFilePath(), error);
  }
  if (error) *error = tr("%1 has no evaluation (eval/*.json)").arg(run_dir);
  return false;
}

void AnalysisView::setResults(const QString& results_json) {
  results_ = results_json;
  results_label_->setText(QFileInfo(results_json).fileName());
  results_label_->setToolTip(results_json);
}

const TypeAnalysis* AnalysisView::current() const {
  if (!data_) return nullptr;
  if (iouType() == u"bbox"_qs && data_->bbox) return &*data_->bbox;
  if (iouType() == u"segm"_qs && data_->segm) return &*data_->segm;
  return nullptr;
}

QString AnalysisView::iouType() const {
  return type_box_->currentText();
}

void AnalysisView::setIouType(const QString& type) {
  const int index = type_box_->findText(type);
  if (index >= 0) type_box_->setCurrentIndex(index);
}

void AnalysisView::showType() {
  const TypeAnalysis* t = current();
  fillClassTable();
  fillErrorImages();
  confusion_plot_->showMatrix(t);
  tide_plot_->showErrors(t);
  pr_plot_->showClass(nullptr, std::nullopt);
  cell_images_->clear();
  cell_ids_.clear();
  if (!t) return;
  // The class with the lowest AP first: where the errors are.
  class_table_->sortByColumn(kAp, Qt::AscendingOrder);
  class_table_->selectRow(0);
  status_->setText(
      tr("%1 evaluation: AP %2, AP50 %3 over %n class(es)", nullptr,
         static_cast<int>(t->classes.size()))
          .arg(t->type)
          .arg(t->stats[0], 0, 'f', 3)
          .arg(t->stats[1], 0, 'f', 3) +
      (t->has_tide ? QString() : tr("; no error analysis in this file (an older engine)")));
}

void AnalysisView::fillClassTable() {
  class_model_->removeRows(0, class_model_->rowCount());
  const TypeAnalysis* t = current();
  if (!t) return;
  for (const ClassAnalysis& c : t->classes) {
    QList<QStandardItem*> row;
    auto* name = new QStandardItem(c.name);
    name->setData(c.name, kSortRole);
    name->setData(QVariant::fromValue<qlonglong>(c.id), kIdRole);
    name->setEditable(false);
    row << name << cell(QString::number(c.ground_truth), static_cast<double>(c.ground_truth))
        << cell(ap(c.ap), c.ap) << cell(ap(c.ap50), c.ap50) << cell(ap(c.ap75), c.ap75)
        << cell({}, -1) << cell({}, -1) << cell({}, -1);
    class_model_->appendRow(row);
    updateThresholdCells(c.id);
  }
}

void AnalysisView::updateThresholdCells(int64_t category_id) {
  const TypeAnalysis* t = current();
  if (!t) return;
  for (int row = 0; row < class_model_->rowCount(); ++row) {
    if (class_model_->item(row, kName)->data(kIdRole).toLongLong() != category_id) continue;
    std::optional<ClassPoint> point;
    const auto& chosen = thresholds_[t->type];
    for (const ClassAnalysis& c : t->classes) {
      const auto it = chosen.find(c.id);
      if (c.id == category_id && it != chosen.end()) point = c.pointAtScore(it->second);
    }
    const auto set = [&](int column, double value, int decimals) {
      QStandardItem* item = class_model_->item(row, column);
      item->setText(point ? QString::number(value, 'f', decimals) : QStringLiteral("–"));
      item->setData(point ? value : -1.0, kSortRole);
    };
    set(kThreshold, point ? point->score : 0, 3);
    set(kPrecision, point ? point->precision : 0, 3);
    set(kRecall, point ? point->recall : 0, 2);
  }
}

void AnalysisView::fillErrorImages() {
  error_images_->setSortingEnabled(false);
  error_images_->setRowCount(0);
  const TypeAnalysis* t = current();
  if (!t) return;
  error_images_->setRowCount(static_cast<int>(t->error_images.size()));
  for (int row = 0; row < static_cast<int>(t->error_images.size()); ++row) {
    const ErrorImage& image = t->error_images[static_cast<size_t>(row)];
    error_images_->setItem(row, 0, numberItem(image.image_id));
    error_images_->setItem(row, 1, numberItem(image.errors));
    for (int i = 0; i < kTideTypes; ++i)
      error_images_->setItem(row, 2 + i, numberItem(image.counts[static_cast<size_t>(i)]));
  }
  error_images_->setSortingEnabled(true);
  error_images_->sortByColumn(1, Qt::DescendingOrder);
}

void AnalysisView::selectClass(int64_t category_id) {
  for (int row = 0; row < class_model_->rowCount(); ++row) {
    if (class_model_->item(row, kName)->data(kIdRole).toLongLong() == category_id) {
      class_table_->selectRow(row);
      return;
    }
  }
}

std::optional<int64_t> AnalysisView::selectedClass() const {
  const QModelIndex index = class_table_->currentIndex();
  if (!index.isValid()) return std::nullopt;
  return class_model_->item(index.row(), kName)->data(kIdRole).toLongLong();
}

std::map<int64_t, double> AnalysisView::thresholds() const {
  const TypeAnalysis* t = current();
  if (!t) return {};
  const auto it = thresholds_.find(t->type);
  return it != thresholds_.end() ? it->second : std::map<int64_t, double>{};
}

void AnalysisView::resetThresholds() {
  const TypeAnalysis* t = current();
  if (!t) return;
  auto& chosen = thresholds_[t->type];
  chosen.clear();
  for (const ClassAnalysis& c : t->classes)
    if (c.f1_best) chosen[c.id] = c.f1_best->score;
  const std::optional<int64_t> selected = selectedClass();
  fillClassTable();
  if (selected) selectClass(*selected);
}

bool AnalysisView::saveThresholds(const QString& path, QString* error) {
  const TypeAnalysis* t = current();
  QString why;
  if (!t) {
    why = tr("no evaluation is open");
  } else {
    eval::ClassThresholds out;
    out.score = thresholds();
    out.source =
        (data_->path + u" ("_qs + t->type + u"), set in the analysis view"_qs).toStdString();
    const std::string json = eval::classThresholdsJson(out, 0.5);
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) ||
        file.write(json.data(), static_cast<qint64>(json.size())) !=
            static_cast<qint64>(json.size()) ||
        !file.commit()) {
      why = tr("cannot write %1: %2").arg(path, file.errorString());
    }
  }
  if (!why.isEmpty()) {
    status_->setText(tr("Thresholds not saved: %1").arg(why));
    if (error) *error = why;
    return false;
  }
  status_->setText(tr("Saved %n class threshold(s) to %1 (inference --thresholds %1)", nullptr,
                      static_cast<int>(thresholds().size()))
                       .arg(QDir::toNativeSeparators(path)));
  return true;
}

void AnalysisView::showCell(int row, int column) {
  const TypeAnalysis* t = current();
  if (!t || t->confusion.empty()) return;
  const int n = t->confusionSize();
  cell_ids_ = t->cell_images.value(row * n + column);
  const int64_t count = t->confusionAt(row, column);
  QString what;
  if (row == n - 1)
    what = tr("background detected as %1").arg(t->columnName(column));
  else if (column == n - 1)
    what = tr("%1 missed").arg(t->rowName(row));
  else
    what = tr("%1 detected as %2").arg(t->rowName(row), t->columnName(column));
  cell_caption_ =
      tr("%1: %2 on %n image(s)", nullptr, static_cast<int>(cell_ids_.size())).arg(what).arg(count);
  cell_label_->setText(cell_caption_);
  cell_images_->clear();
  for (qint64 id : cell_ids_) {
    auto* item = new QListWidgetItem(tr("image %1").arg(id), cell_images_);
    item->setData(Qt::UserRole, id);
  }
}

void AnalysisView::requestImages(QList<qint64> ids, const QString& caption) {
  if (ids.isEmpty() || !data_) return;
  if (results_.isEmpty()) {
    status_->setText(
        tr("No results file to show these images with: choose the results.json "
           "of the evaluated images (Results…)"));
    return;
  }
  emit imagesRequested(ids, caption, results_, data_->image_dir, data_->annotations);
}

QString AnalysisView::statusText() const {
  return status_->text();
}

}  // namespace mrcnn::ui

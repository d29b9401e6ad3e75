#include "ui/dataset_browser/dataset_browser.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "dataset/shapes/shapes_generator.h"
#include "dataset/stats/spec_anchors.h"
#include "specs/spec.h"
#include "ui/annotation_editor/annotation_editor.h"
#include "ui/common/annotation_overlay.h"
#include "ui/common/background.h"
#include "ui/common/coco_overlay.h"
#include "ui/common/image_file.h"
#include "ui/common/image_view.h"
#include "ui/common/layer_controls.h"
#include "ui/common/thumbnail_cache.h"
#include "ui/dataset_browser/dataset_stats_view.h"
#include "ui/dataset_browser/image_list_model.h"

namespace mrcnn::ui {

namespace {

struct LoadedDataset {
  std::shared_ptr<const BrowsedDataset> dataset;
  QString error;
};

struct LoadedImage {
  QImage image;
  std::vector<OverlayInstance> instances;
  QString error;
};

}  // namespace

DatasetBrowser::DatasetBrowser(QWidget* parent) : QWidget(parent) {
  pool_.setMaxThreadCount(1);
  thumbnails_ = new ThumbnailCache(QSize(160, 120), this);
  model_ = new ImageListModel(thumbnails_, this);

  auto* open = new QPushButton(tr("&Open dataset…"), this);
  connect(open, &QPushButton::clicked, this, &DatasetBrowser::chooseDataset);
  category_ = new QComboBox(this);
  category_->setMinimumContentsLength(16);
  category_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  category_->setToolTip(tr("Show images holding this category"));
  search_ = new QLineEdit(this);
  search_->setPlaceholderText(tr("Image id or file name"));
  search_->setClearButtonEnabled(true);
  count_ = new QLabel(this);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  grid_ = new QListView(this);
  grid_->setViewMode(QListView::IconMode);
  grid_->setResizeMode(QListView::Adjust);
  grid_->setMovement(QListView::Static);
  grid_->setUniformItemSizes(true);  // 5,000 rows lay out without asking each for its size
  grid_->setIconSize(thumbnails_->size());
  grid_->setGridSize(thumbnails_->size() + QSize(16, 32));
  grid_->setSpacing(4);
  grid_->setWordWrap(false);
  grid_->setTextElideMode(Qt::ElideMiddle);
  grid_->setSelectionMode(QAbstractItemView::SingleSelection);
  grid_->setLayoutMode(QListView::Batched);
  grid_->setModel(model_);
  connect(grid_->selectionModel(), &QItemSelectionModel::currentChanged, this,
          [this](const QModelIndex& current) {
            if (current.isValid()) showRow(current.row());
          });

  view_ = new ImageView(this);
  editor_ = new AnnotationEditor(this);
  image_stack_ = new QStackedWidget(this);
  image_stack_->addWidget(view_);
  image_stack_->addWidget(editor_);
  edit_ = new QPushButton(tr("Edit"), this);
  edit_->setCheckable(true);
  edit_->setToolTip(tr("Edit this image's annotations: drag vertices, double-click an edge to "
                       "add one, Delete, P draws a polygon, B a box, Ctrl+Z undoes. The file is "
                       "never written: changes go to its journal (<file>.changes.jsonl)"));
  save_ = new QPushButton(tr("Save Reviewed Copy"), this);
  save_->setToolTip(tr("Write the edited annotations beside the file (<file>.reviewed.json)"));
  save_->setEnabled(false);
  connect(edit_, &QPushButton::toggled, this, &DatasetBrowser::setEditing);
  connect(save_, &QPushButton::clicked, this, [this] { saveReviewed(); });
  connect(editor_, &AnnotationEditor::message, status_, &QLabel::setText);
  layers_ = new LayerControls(this);
  connect(layers_, &LayerControls::layersChanged, view_, &ImageView::setLayers);
  view_->setLayers(layers_->layers());

  connect(category_, &QComboBox::currentIndexChanged, this, &DatasetBrowser::applyFilter);
  connect(search_, &QLineEdit::textChanged, this, &DatasetBrowser::applyFilter);

  auto* left = new QWidget(this);
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(0, 0, 0, 0);
  auto* filters = new QHBoxLayout;
  filters->addWidget(category_, 1);
  filters->addWidget(search_, 1);
  left_layout->addWidget(open);
  left_layout->addLayout(filters);
  left_layout->addWidget(grid_, 1);
  left_layout->addWidget(count_);

  auto* image_page = new QWidget(this);
  auto* right_layout = new QVBoxLayout(image_page);
  right_layout->setContentsMargins(0, 0, 0, 0);
  auto* image_bar = new QHBoxLayout;
  image_bar->addWidget(layers_, 1);
  image_bar->addWidget(edit_);
  image_bar->addWidget(save_);
  right_layout->addLayout(image_bar);
  right_layout->addWidget(image_stack_, 1);
  // The image with its ground truth, or the dataset check of the whole file.
  stats_ = new DatasetStatsView(this);
  tabs_ = new QTabWidget(this);
  tabs_->setDocumentMode(true);
  tabs_->addTab(image_page, tr("Image"));
  auto* stats_page = new QScrollArea(this);  // its charts never set the window's minimum
  stats_page->setWidgetResizable(true);
  stats_page->setFrameShape(QFrame::NoFrame);
  stats_page->setWidget(stats_);
  tabs_->addTab(stats_page, tr("Statistics"));
  QWidget* right = tabs_;

  auto* splitter = new QSplitter(this);
  splitter->addWidget(left);
  splitter->addWidget(right);
  splitter->setStretchFactor(0, 2);
  splitter->setStretchFactor(1, 3);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(splitter, 1);
  layout->addWidget(status_);
  status_->setText(tr("Open a COCO annotation file and its image folder."));
}

bool DatasetBrowser::editing() const { return image_stack_->currentWidget() == editor_; }

void DatasetBrowser::leaveEditor() {
  const QSignalBlocker block(edit_);
  edit_->setChecked(false);
  image_stack_->setCurrentWidget(view_);
}

void DatasetBrowser::setEditing(bool on) {
  const auto dataset = model_->dataset();
  if (on && (!dataset || current_image_id_ < 0 || view_->image().isNull())) on = false;
  if (on && !edits_) {
    try {
      edits_ = std::make_unique<review::AnnotationSet>(
          review::AnnotationSet::open(dataset->annotations.toStdString()));
    } catch (const std::exception& e) {
      status_->setText(tr("Cannot edit: %1").arg(QString::fromUtf8(e.what())));
      on = false;
    }
  }
  if (edit_->isChecked() != on) {
    const QSignalBlocker block(edit_);
    edit_->setChecked(on);
  }
  if (!on) {
    if (editing()) {
      leaveEditor();
      const QModelIndex current = grid_->currentIndex();
      if (current.isValid()) showRow(current.row());  // drawn again with the edits
    }
    return;
  }
  std::vector<std::pair<int64_t, QString>> categories;
  for (const auto& c : dataset->coco.categories())
    categories.emplace_back(c.id, QString::fromStdString(c.name));
  editor_->setImage(view_->image(), edits_.get(), current_image_id_, std::move(categories));
  image_stack_->setCurrentWidget(editor_);
  save_->setEnabled(true);
  editor_->setFocus();
  status_->setText(tr("Editing: changes go to %1").arg(QString::fromStdString(edits_->journalPath().string())));
}

QString DatasetBrowser::saveReviewed(QString* error) {
  if (!edits_) return {};
  try {
    const QString path = QString::fromStdString(edits_->saveReviewed().string());
    status_->setText(tr("Saved the edited annotations to %1 (%2 edits)").arg(path).arg(edits_->changes()));
    return path;
  } catch (const std::exception& e) {
    const QString message = tr("Cannot save: %1").arg(QString::fromUtf8(e.what()));
    status_->setText(message);
    if (error) *error = message;
    return {};
  }
}

void DatasetBrowser::showStatistics() {
  tabs_->setCurrentIndex(1);
}

DatasetBrowser::~DatasetBrowser() {
  waitForBackground(pool_);
}

std::shared_ptr<const BrowsedDataset> DatasetBrowser::dataset() const {
  return model_->dataset();
}

QString DatasetBrowser::statusText() const {
  return status_->text();
}

void DatasetBrowser::chooseDataset() {
  const QString json = QFileDialog::getOpenFileName(this, tr("COCO annotation file"), QString(),
                                                    tr("COCO json (*.json);;All files (*)"));
  if (json.isEmpty()) return;
  // COCO's layout: annotations/instances_X.json beside images/X or X.
  QString guess = QFileInfo(json).absolutePath();
  const QString split = QFileInfo(json).completeBaseName().section('_', -1);
  for (const QString& candidate : {QStringLiteral("../images/") + split,
                                   QStringLiteral("../") + split, QStringLiteral("../images")}) {
    const QDir dir(QFileInfo(json).absoluteDir().filePath(candidate));
    if (dir.exists()) {
      guess = dir.absolutePath();
      break;
    }
  }
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Image folder"), guess);
  if (dir.isEmpty()) return;
  openDataset(json, dir);
}

void DatasetBrowser::openDataset(const QString& annotationsJson, const QString& imageDir) {
  openWithAnchors(annotationsJson, imageDir, {}, {});
}

void DatasetBrowser::openWithAnchors(const QString& annotationsJson, const QString& imageDir,
                                     const dataset::AnchorCoverageOptions& anchors,
                                     const QString& source) {
  const uint64_t generation = ++open_generation_;
  ++loading_;
  thumbnails_->cancelPending();
  status_->setText(tr("Loading %1…").arg(QDir::toNativeSeparators(annotationsJson)));
  runInBackground(
      pool_, this,
      [annotationsJson, imageDir, anchors, source] {
        LoadedDataset out;
        try {
          dataset::CocoLoadOptions options;
          options.threads = 1;  // one core for the reader, the other for the UI
          out.dataset =
              BrowsedDataset::make(dataset::loadCoco(annotationsJson.toStdString(), options),
                                   annotationsJson, imageDir, anchors, source);
        } catch (const std::exception& e) {
          out.error = QString::fromStdString(e.what());
        }
        return out;
      },
      [this, generation](LoadedDataset loaded) {
        --loading_;
        if (generation != open_generation_) return;
        datasetReady(std::move(loaded.dataset), loaded.error);
      });
}

bool DatasetBrowser::openSpecDataset(const QString& specPath, const QString& split) {
  const auto refuse = [&](const QString& why) {
    status_->setText(tr("Cannot open the dataset of %1: %2").arg(specPath, why));
    emit datasetLoaded(false, why);
    return false;
  };
  if (split != QLatin1String("train") && split != QLatin1String("val"))
    return refuse(tr("unknown split \"%1\" (train or val)").arg(split));
  const spec::LoadedSpec loaded = spec::loadSpecFile(specPath.toStdString());
  if (!loaded.ok()) {
    const auto errors = loaded.errors();
    return refuse(QString::fromStdString(errors.front().format()) +
                  (errors.size() > 1
                       ? tr(" (and %n more)", nullptr, static_cast<int>(errors.size() - 1))
                       : QString()));
  }
  const spec::Resolved& r = loaded.resolved;
  const bool train = split == QLatin1String("train");
  std::filesystem::path json = train ? r.train_json_file : r.val_json_file;
  std::filesystem::path images = train ? r.train_image_dir : r.val_image_dir;
  if (json.empty() && !r.shapes_root.empty()) {
    json = dataset::shapesAnnotationFile(r.shapes_root, split.toStdString());
    images = dataset::shapesImageDir(r.shapes_root, split.toStdString());
  }
  if (json.empty())
    return refuse(tr("the spec names no COCO json for %1 (data_config.%1_json_file)").arg(split));
  if (!std::filesystem::exists(json))
    return refuse(tr("%1 does not exist%2")
                      .arg(QString::fromStdString(json.string()),
                           r.shapes_root.empty() ? QString()
                                                 : tr(" (training generates the shapes dataset)")));
  openWithAnchors(QString::fromStdString(json.string()), QString::fromStdString(images.string()),
                  dataset::anchorCoverageFromSpec(loaded),
                  tr("the anchors and resize of %1").arg(QFileInfo(specPath).fileName()));
  return true;
}

void DatasetBrowser::datasetReady(std::shared_ptr<const BrowsedDataset> dataset,
                                  const QString& error) {
  if (!dataset) {
    status_->setText(tr("Cannot open the dataset: %1").arg(error));
    emit datasetLoaded(false, error);
    return;
  }
  current_image_id_ = -1;
  leaveEditor();
  view_->clear();
  // A file edited before (its journal beside it) is shown as edited.
  edits_.reset();
  save_->setEnabled(false);
  try {
    const std::filesystem::path json = dataset->annotations.toStdString();
    if (std::filesystem::exists(review::journalPathOf(json))) {
      edits_ = std::make_unique<review::AnnotationSet>(review::AnnotationSet::open(json));
      save_->setEnabled(true);
    }
  } catch (const std::exception& e) {
    status_->setText(tr("Its edits cannot be read: %1").arg(QString::fromUtf8(e.what())));
  }
  model_->setDataset(dataset);
  stats_->showStats(dataset->stats.sets.empty() ? nullptr : &dataset->stats.sets.front(),
                    dataset->stats.problems, dataset->anchors_source);
  fillCategories();
  const auto& coco = dataset->coco;
  QString text = tr("%1: %2 images, %3 annotations, %4 categories")
                     .arg(QFileInfo(dataset->annotations).fileName())
                     .arg(coco.images().size())
                     .arg(coco.annotations().size())
                     .arg(coco.categories().size());
  if (coco.warningCount() > 0)
    text += tr("; %n reader warning(s) (see the warning review)", nullptr,
               static_cast<int>(coco.warningCount()));
  status_->setText(text);
  applyFilter();
  if (model_->rowCount() > 0) grid_->setCurrentIndex(model_->index(0));
  emit datasetLoaded(true, QString());
}

void DatasetBrowser::fillCategories() {
  const QSignalBlocker block(category_);
  category_->clear();
  category_->addItem(tr("All categories"), QVariant::fromValue<qint64>(-1));
  const auto& d = model_->dataset();
  if (!d) return;
  const auto categories = d->coco.categories();
  for (size_t i = 0; i < categories.size(); ++i) {
    QPixmap swatch(12, 12);
    swatch.fill(categoryColour(categories[i].id));
    category_->addItem(QIcon(swatch),
                       QStringLiteral("%1 (%2)")
                           .arg(QString::fromStdString(categories[i].name))
                           .arg(d->category_image_counts[i]),
                       QVariant::fromValue<qint64>(categories[i].id));
  }
}

void DatasetBrowser::setCategoryFilter(int64_t category_id) {
  const int i = category_->findData(QVariant::fromValue<qint64>(category_id));
  category_->setCurrentIndex(std::max(0, i));
  applyFilter();
}

void DatasetBrowser::setTextFilter(const QString& text) {
  search_->setText(text);
  applyFilter();
}

void DatasetBrowser::applyFilter() {
  const int64_t category = category_->currentData().toLongLong();
  const QString text = search_->text();
  if (category != model_->categoryFilter() || text.trimmed() != model_->textFilter())
    model_->setFilter(category, text);
  count_->setText(model_->dataset() ? tr("%1 of %2 images")
                                          .arg(model_->rowCount())
                                          .arg(model_->dataset()->coco.images().size())
                                    : QString());
  const int row = model_->rowOfImageId(current_image_id_);
  if (row >= 0) {
    const QSignalBlocker block(grid_->selectionModel());
    grid_->setCurrentIndex(model_->index(row));
    grid_->scrollTo(model_->index(row));
  }
}

bool DatasetBrowser::selectImage(int64_t image_id) {
  const int row = model_->rowOfImageId(image_id);
  if (row < 0) return false;
  grid_->setCurrentIndex(model_->index(row));
  grid_->scrollTo(model_->index(row));
  if (current_image_id_ != image_id) showRow(row);
  return true;
}

void DatasetBrowser::showRow(int row) {
  const auto dataset = model_->dataset();
  if (!dataset || row < 0 || row >= model_->rowCount()) return;
  const uint32_t index = model_->imageIndexAt(row);
  const dataset::CocoImage& image = dataset->coco.images()[index];
  current_image_id_ = image.id;
  const uint64_t generation = ++image_generation_;
  const QString path = imagePath(dataset->image_dir, image);
  const int64_t id = image.id;
  leaveEditor();  // another image: the editor's is no longer shown
  // With edits, the annotations as they now stand.
  std::optional<std::vector<review::Annotation>> edited;
  if (edits_) {
    edited.emplace();
    for (const review::Annotation* a : edits_->ofImage(id)) edited->push_back(*a);
  }
  runInBackground(
      pool_, this,
      [dataset, index, path, edited] {
        LoadedImage out;
        const auto& im = dataset->coco.images()[index];
        ImageFile file = readImageOrCanvas(
            path, QSize(static_cast<int>(im.width), static_cast<int>(im.height)));
        out.image = std::move(file.image);
        out.error = file.problem;
        if (edited) {
          for (const review::Annotation& a : *edited)
            out.instances.push_back(annotationOverlay(a, dataset->coco, im.height, im.width));
        } else {
          out.instances = groundTruthInstances(dataset->coco, index);
        }
        return out;
      },
      [this, generation, id, path](LoadedImage loaded) {
        if (generation != image_generation_) return;
        view_->setImage(loaded.image);
        const size_t n = loaded.instances.size();
        view_->setInstances(std::move(loaded.instances));
        QString caption = tr("%1 — id %2 — %n annotation(s)", nullptr, static_cast<int>(n))
                              .arg(QFileInfo(path).fileName())
                              .arg(id);
        if (!loaded.error.isEmpty())
          caption += tr(" — the image cannot be shown: %1").arg(loaded.error);
        view_->setCaption(caption);
        emit imageShown(id);
      });
}

}  // namespace mrcnn::ui

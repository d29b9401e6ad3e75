#include "ui/predictions/prediction_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QSpinBox>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSlider>
#include <QSplitter>
#include <QStandardPaths>
#include <QVBoxLayout>

#include "dataset/coco/coco.h"
#include "ui/common/background.h"
#include "ui/common/coco_overlay.h"
#include "ui/common/image_file.h"
#include "ui/common/image_view.h"
#include "ui/common/layer_controls.h"
#include "ui/predictions/inference_runner.h"

namespace mrcnn::ui {

namespace {

struct LoadedResults {
  std::shared_ptr<const PredictionSet> predictions;
  std::shared_ptr<const dataset::CocoDataset> truth;
  QString error;
  QString truth_error;
};

struct LoadedImage {
  QImage image;
  QString error;
  std::vector<OverlayInstance> predictions;
  std::vector<OverlayInstance> truth;
  bool has_truth = false;
};

// A row with a line edit and a "…" button that asks for a file.
QWidget* fileRow(QWidget* parent, QLineEdit* edit, const QString& title, const QString& filter) {
  auto* row = new QWidget(parent);
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* browse = new QPushButton(QStringLiteral("…"), row);
  browse->setFixedWidth(browse->fontMetrics().horizontalAdvance(QStringLiteral("…")) + 24);
  browse->setToolTip(title);
  QObject::connect(browse, &QPushButton::clicked, edit, [edit, title, filter] {
    const QString path = QFileDialog::getOpenFileName(edit, title, edit->text(), filter);
    if (!path.isEmpty()) edit->setText(path);
  });
  layout->addWidget(edit, 1);
  layout->addWidget(browse);
  return row;
}

}  // namespace

PredictionView::PredictionView(QWidget* parent) : QWidget(parent) {
  pool_.setMaxThreadCount(1);
  runner_ = new InferenceRunner(this);
  spec_ = new QLineEdit(this);
  spec_->setPlaceholderText(tr("Experiment spec (.txt)"));
  checkpoint_ = new QLineEdit(this);
  checkpoint_->setPlaceholderText(tr("Checkpoint (.pt); empty: the run's best"));
  backend_ = new QComboBox(this);
  backend_->addItem(tr("LibTorch (the model, in the spec's precision)"),
                    QStringLiteral("libtorch"));
  backend_->addItem(tr("OpenVINO (exported to ONNX, on the CPU)"), QStringLiteral("openvino"));
  backend_->setToolTip(
      tr("What runs the model: the engine's LibTorch model, or an ONNX export run by "
         "OpenVINO's runtime (the checkpoint exported on the fly, or the exported model named "
         "below, int8 included; bf16 where the spec asks for it and the CPU has it)"));
  onnx_ = new QLineEdit(this);
  onnx_->setPlaceholderText(tr("Empty: the checkpoint, exported on the fly"));
  onnx_->setToolTip(tr("An exported model for OpenVINO to run: an export's model.onnx, or its "
                       "model.int8.onnx (int8, calibrated by Export with data type int8; its "
                       "accuracy cost is in that export's export_report.json)"));
  tile_ = new QCheckBox(tr("Tiles of"), this);
  tile_->setToolTip(tr("For images much larger than the model's input (aerial, microscopy): "
                       "each image cut into overlapping tiles, the detections merged back "
                       "(--tile, --tile-overlap)"));
  tile_size_ = new QSpinBox(this);
  tile_size_->setRange(32, 8192);
  tile_size_->setValue(512);
  tile_size_->setSuffix(tr(" px"));
  tile_overlap_ = new QDoubleSpinBox(this);
  tile_overlap_->setRange(0.0, 0.9);
  tile_overlap_->setSingleStep(0.05);
  tile_overlap_->setValue(0.2);
  tile_overlap_->setPrefix(tr("overlap "));
  tile_size_->setEnabled(false);
  tile_overlap_->setEnabled(false);
  connect(tile_, &QCheckBox::toggled, tile_size_, &QWidget::setEnabled);
  connect(tile_, &QCheckBox::toggled, tile_overlap_, &QWidget::setEnabled);
  run_image_ = new QPushButton(tr("Run on &image"), this);
  run_image_->setToolTip(tr("Run inference on the image shown (or pick one)"));
  run_folder_ = new QPushButton(tr("Run on &folder…"), this);
  draft_ = new QPushButton(tr("Edit as Draft"), this);
  draft_->setToolTip(tr("The last run's detections at or above the score threshold it ran with, "
                        "as annotations to correct in the annotation editor (model-assisted "
                        "labelling)"));
  draft_->setEnabled(false);
  connect(draft_, &QPushButton::clicked, this, [this] {
    if (!draft_json_.isEmpty()) emit editDraft(draft_json_, draft_images_);
  });
  stop_ = new QPushButton(tr("Stop"), this);
  stop_->setEnabled(false);
  connect(run_image_, &QPushButton::clicked, this, &PredictionView::runOnCurrentImage);
  connect(run_folder_, &QPushButton::clicked, this, [this] { runOnFolder(); });
  connect(stop_, &QPushButton::clicked, runner_, &InferenceRunner::stop);

  auto* open_results = new QPushButton(tr("Open results…"), this);
  connect(open_results, &QPushButton::clicked, this, [this] {
    const QString json = QFileDialog::getOpenFileName(this, tr("COCO results file"), QString(),
                                                      tr("Results (*.json)"));
    if (json.isEmpty()) return;
    const QString dir =
        QFileDialog::getExistingDirectory(this, tr("Image folder"), QFileInfo(json).absolutePath());
    if (!dir.isEmpty()) showResults(json, dir, annotations_);
  });

  auto* form = new QFormLayout;
  form->addRow(tr("Spec"), fileRow(this, spec_, tr("Experiment spec"),
                                   tr("Specs (*.txt *.prototxt);;All files (*)")));
  form->addRow(tr("Checkpoint"), fileRow(this, checkpoint_, tr("Checkpoint"),
                                         tr("Checkpoints (*.pt *.pth);;All files (*)")));
  form->addRow(tr("Backend"), backend_);
  onnx_row_ = fileRow(this, onnx_, tr("Exported model"), tr("ONNX models (*.onnx);;All files (*)"));
  form->addRow(tr("Exported model"), onnx_row_);
  const auto follow_backend = [this] { onnx_row_->setEnabled(backend() == QStringLiteral("openvino")); };
  connect(backend_, &QComboBox::currentIndexChanged, this, follow_backend);
  follow_backend();
  auto* tiles = new QHBoxLayout;
  tiles->addWidget(tile_);
  tiles->addWidget(tile_size_);
  tiles->addWidget(tile_overlap_);
  tiles->addStretch(1);
  form->addRow(tr("Large images"), tiles);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_image_);
  buttons->addWidget(run_folder_);
  buttons->addWidget(stop_);
  buttons->addWidget(draft_);
  buttons->addStretch(1);
  buttons->addWidget(open_results);

  images_ = new QListWidget(this);
  images_->setMinimumWidth(180);
  filter_bar_ = new QWidget(this);
  filter_label_ = new QLabel(filter_bar_);
  filter_label_->setWordWrap(true);
  auto* show_all = new QPushButton(tr("Show All"), filter_bar_);
  connect(show_all, &QPushButton::clicked, this, &PredictionView::clearImageFilter);
  auto* filter_layout = new QVBoxLayout(filter_bar_);
  filter_layout->setContentsMargins(0, 0, 0, 0);
  filter_layout->addWidget(filter_label_);
  filter_layout->addWidget(show_all);
  filter_bar_->hide();
  connect(images_, &QListWidget::currentRowChanged, this, [this](int row) {
    if (row >= 0 && row != current_) selectImage(row);
  });

  mode_box_ = new QComboBox(this);
  mode_box_->addItem(tr("Predictions"));
  mode_box_->addItem(tr("Ground truth"));
  mode_box_->addItem(tr("Side by side"));
  connect(mode_box_, &QComboBox::currentIndexChanged, this,
          [this](int i) { setMode(static_cast<Mode>(i)); });
  threshold_ = new QSlider(Qt::Horizontal, this);
  threshold_->setRange(0, 100);
  threshold_->setValue(50);
  threshold_->setMaximumWidth(180);
  threshold_->setToolTip(tr("Hide detections scoring below this"));
  threshold_label_ = new QLabel(this);
  threshold_label_->setMinimumWidth(threshold_label_->fontMetrics().horizontalAdvance("≥ 0.00  "));
  connect(threshold_, &QSlider::valueChanged, this, [this] {
    threshold_label_->setText(QStringLiteral("≥ %1").arg(scoreThreshold(), 0, 'f', 2));
    refreshViews();
    updateImageList();
  });
  threshold_label_->setText(QStringLiteral("≥ %1").arg(scoreThreshold(), 0, 'f', 2));
  layers_ = new LayerControls(this);

  prediction_view_ = new ImageView(this);
  truth_view_ = new ImageView(this);
  truth_view_->hide();
  connect(layers_, &LayerControls::layersChanged, prediction_view_, &ImageView::setLayers);
  connect(layers_, &LayerControls::layersChanged, truth_view_, &ImageView::setLayers);
  prediction_view_->setLayers(layers_->layers());
  truth_view_->setLayers(layers_->layers());

  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Show"), this));
  controls->addWidget(mode_box_);
  controls->addSpacing(12);
  controls->addWidget(new QLabel(tr("Score"), this));
  controls->addWidget(threshold_);
  controls->addWidget(threshold_label_);
  controls->addSpacing(12);
  controls->addWidget(layers_, 1);

  auto* views = new QHBoxLayout;
  views->addWidget(truth_view_, 1);
  views->addWidget(prediction_view_, 1);
  auto* right = new QWidget(this);
  auto* right_layout = new QVBoxLayout(right);
  right_layout->setContentsMargins(0, 0, 0, 0);
  right_layout->addLayout(controls);
  right_layout->addLayout(views, 1);

  log_ = new QPlainTextEdit(this);
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(2000);
  log_->setMaximumHeight(90);
  log_->setPlaceholderText(tr("Engine output"));
  connect(runner_, &InferenceRunner::output, log_, &QPlainTextEdit::appendPlainText);
  connect(runner_, &InferenceRunner::progress, this, [this](qint64 done, qint64 total) {
    const InferenceRequest& r = runner_->request();
    status_->setText(
        total > 0
            ? tr("Running inference on %1: %2 of %3 images").arg(r.images).arg(done).arg(total)
            : tr("Running inference on %1: %2 images").arg(r.images).arg(done));
  });
  connect(runner_, &InferenceRunner::finished, this, [this](bool ok, const QString& message) {
    run_image_->setEnabled(true);
    run_folder_->setEnabled(true);
    stop_->setEnabled(false);
    const InferenceRequest& r = runner_->request();
    if (!ok) {
      status_->setText(tr("Inference failed: %1").arg(message));
    } else {
      const QFileInfo images(r.images);
      const QString image_dir = images.isDir() ? images.absoluteFilePath() : images.absolutePath();
      showResults(QDir(r.out).filePath(QStringLiteral("results.json")), image_dir, annotations_);
      if (QFileInfo::exists(r.draft_annotations)) {
        draft_json_ = r.draft_annotations;
        draft_images_ = image_dir;
        draft_->setEnabled(true);
      }
    }
    emit inferenceFinished(ok, message);
  });

  status_ = new QLabel(
      tr("Choose a spec and a checkpoint and run inference, or open a results file."), this);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* list = new QWidget(this);
  auto* list_layout = new QVBoxLayout(list);
  list_layout->setContentsMargins(0, 0, 0, 0);
  list_layout->addWidget(filter_bar_);
  list_layout->addWidget(images_, 1);
  auto* splitter = new QSplitter(this);
  splitter->addWidget(list);
  splitter->addWidget(right);
  splitter->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(splitter, 1);
  layout->addWidget(log_);
  layout->addWidget(status_);
}

PredictionView::~PredictionView() {
  waitForBackground(pool_);
}

QString PredictionView::spec() const {
  return spec_->text();
}
QString PredictionView::checkpoint() const {
  return checkpoint_->text();
}
void PredictionView::setSpec(const QString& path) {
  spec_->setText(path);
}
void PredictionView::setCheckpoint(const QString& path) {
  checkpoint_->setText(path);
}
QString PredictionView::backend() const {
  return backend_->currentData().toString();
}
int PredictionView::tileSize() const {
  return tile_->isChecked() ? tile_size_->value() : 0;
}

void PredictionView::setTiles(int size, double overlap) {
  tile_->setChecked(size > 0);
  if (size > 0) tile_size_->setValue(size);
  tile_overlap_->setValue(overlap);
}

void PredictionView::setBackend(const QString& backend) {
  const int i = backend_->findData(backend);
  if (i >= 0) backend_->setCurrentIndex(i);
}

QString PredictionView::exportedModel() const {
  return onnx_->text().trimmed();
}

void PredictionView::setExportedModel(const QString& path) {
  onnx_->setText(path);
}
QString PredictionView::statusText() const {
  return status_->text();
}
QString PredictionView::logText() const {
  return log_->toPlainText();
}

double PredictionView::scoreThreshold() const {
  return threshold_->value() / 100.0;
}

void PredictionView::setScoreThreshold(double threshold) {
  threshold_->setValue(static_cast<int>(threshold * 100 + 0.5));
}

void PredictionView::setMode(Mode mode) {
  mode_ = mode;
  if (mode_box_->currentIndex() != static_cast<int>(mode)) {
    const QSignalBlocker block(mode_box_);
    mode_box_->setCurrentIndex(static_cast<int>(mode));
  }
  // Predictions and ground truth toggle in one view; side by side uses both.
  truth_view_->setVisible(mode == Mode::SideBySide);
  refreshViews();
}

QString PredictionView::currentImagePath() const {
  if (predictions_ && current_ >= 0)
    return imageFilePath(predictions_->images[static_cast<size_t>(current_)]);
  return last_image_file_;
}

QString PredictionView::imageFilePath(const PredictedImage& image) const {
  QString name = image.file_name;
  if (name.isEmpty() && truth_) {
    if (const auto index = truth_->imageIndex(image.image_id)) {
      const auto& f = truth_->images()[*index].file_name;
      name = QString::fromUtf8(f.data(), static_cast<qsizetype>(f.size()));
    }
  }
  const QDir dir(image_dir_);
  const QString path = dir.filePath(name);
  if (QFileInfo::exists(path) || name.isEmpty()) return path;
  return dir.filePath(QFileInfo(name).fileName());
}

void PredictionView::runOnCurrentImage() {
  QString image = currentImagePath();
  if (image.isEmpty() || !QFileInfo::exists(image)) {
    image = QFileDialog::getOpenFileName(this, tr("Image"), QString(),
                                         tr("Images (*.jpg *.jpeg *.png *.bmp)"));
    if (image.isEmpty()) return;
  }
  runOnImage(image);
}

void PredictionView::runOnImage(const QString& file) {
  last_image_file_ = file;
  runInference(file);
}

void PredictionView::setAnnotations(const QString& path) {
  annotations_ = path;
}

void PredictionView::setOutputRoot(const QString& dir) {
  output_root_ = dir;
}

void PredictionView::runOnFolder(const QString& folder) {
  const QString dir =
      folder.isEmpty() ? QFileDialog::getExistingDirectory(this, tr("Image folder")) : folder;
  if (!dir.isEmpty()) runInference(dir);
}

void PredictionView::runInference(const QString& images) {
  InferenceRequest request;
  request.spec = spec();
  request.checkpoint = checkpoint();
  request.backend = backend();
  if (request.backend == QStringLiteral("openvino")) request.onnx = exportedModel();
  request.tile = tileSize();
  request.tile_overlap = tile_overlap_->value();
  request.images = images;
  const QString root =
      !output_root_.isEmpty()
          ? output_root_
          : QDir(QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation))
                .filePath(QStringLiteral("inference"));
  request.out = QDir(root).filePath(
      QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss-zzz")));
  request.draft_annotations = QDir(request.out).filePath(QStringLiteral("draft_annotations.json"));
  request.draft_threshold = scoreThreshold();
  QString error;
  if (!runner_->start(request, &error)) {
    status_->setText(tr("Cannot run inference: %1").arg(error));
    emit inferenceFinished(false, error);
    return;
  }
  log_->clear();
  run_image_->setEnabled(false);
  run_folder_->setEnabled(false);
  stop_->setEnabled(true);
  status_->setText(tr("Running inference on %1 → %2").arg(images, request.out));
}

void PredictionView::showResults(const QString& resultsJson, const QString& imageDir,
                                 const QString& annotations) {
  const uint64_t generation = ++load_generation_;
  status_->setText(tr("Loading %1…").arg(resultsJson));
  runInBackground(
      pool_, this,
      [resultsJson, annotations] {
        LoadedResults out;
        try {
          out.predictions = std::make_shared<const PredictionSet>(readPredictions(resultsJson));
        } catch (const std::exception& e) {
          out.error = QString::fromUtf8(e.what());
          return out;
        }
        if (!annotations.isEmpty()) {
          try {
            dataset::CocoLoadOptions options;
            options.threads = 1;
            out.truth = std::make_shared<const dataset::CocoDataset>(
                dataset::loadCoco(annotations.toStdString(), options));
          } catch (const std::exception& e) {
            out.truth_error = QString::fromUtf8(e.what());
          }
        }
        return out;
      },
      [this, generation, imageDir, annotations](LoadedResults loaded) {
        if (generation != load_generation_) return;
        if (!loaded.predictions) {
          status_->setText(tr("Cannot read the results: %1").arg(loaded.error));
          emit resultsLoaded(false, loaded.error);
          return;
        }
        predictions_ = std::move(loaded.predictions);
        truth_ = std::move(loaded.truth);
        image_dir_ = imageDir;
        annotations_ = annotations;
        current_ = -1;
        images_->clear();
        updateImageList();
        QString text =
            tr("%1: %n detection(s)", nullptr, static_cast<int>(predictions_->count))
                .arg(QDir::toNativeSeparators(predictions_->path)) +
            tr(" on %n image(s)", nullptr, static_cast<int>(predictions_->images.size()));
        if (!loaded.truth_error.isEmpty())
          text += tr("; no ground truth: %1").arg(loaded.truth_error);
        status_->setText(text);
        if (keep_filter_on_load_) {
          applyImageFilter();
        } else {
          clearImageFilter();
          if (!predictions_->images.empty()) selectImage(0);
        }
        keep_filter_on_load_ = false;
        emit resultsLoaded(true, QString());
      });
}

void PredictionView::showImages(const QList<qint64>& ids, const QString& caption,
                                const QString& results, const QString& imageDir,
                                const QString& annotations) {
  filter_ = ids;
  filter_caption_ = caption;
  if (predictions_ &&
      QFileInfo(predictions_->path).absoluteFilePath() == QFileInfo(results).absoluteFilePath()) {
    applyImageFilter();
    return;
  }
  keep_filter_on_load_ = true;
  showResults(results, imageDir.isEmpty() ? QFileInfo(results).absolutePath() : imageDir,
              annotations);
}

void PredictionView::applyImageFilter() {
  if (!predictions_ || filter_.isEmpty()) return;
  int first = -1, first_rank = static_cast<int>(filter_.size()), listed = 0;
  for (size_t i = 0; i < predictions_->images.size(); ++i) {
    const int rank = static_cast<int>(filter_.indexOf(predictions_->images[i].image_id));
    if (QListWidgetItem* item = images_->item(static_cast<int>(i))) item->setHidden(rank < 0);
    if (rank < 0) continue;
    ++listed;
    if (rank < first_rank) {
      first_rank = rank;
      first = static_cast<int>(i);
    }
  }
  QString text = tr("%1 — %n image(s) listed", nullptr, listed).arg(filter_caption_);
  if (const int absent = static_cast<int>(filter_.size()) - listed; absent > 0)
    text += tr("; %n without detections in %1", nullptr, absent)
                .arg(QFileInfo(predictions_->path).fileName());
  filter_label_->setText(text);
  filter_bar_->show();
  if (first >= 0) selectImage(first);
}

void PredictionView::clearImageFilter() {
  filter_.clear();
  filter_caption_.clear();
  for (int i = 0; i < images_->count(); ++i)
    images_->item(i)->setHidden(false);
  filter_bar_->hide();
}

QString PredictionView::imageFilterText() const {
  return filter_bar_->isVisible() || !filter_.isEmpty() ? filter_label_->text() : QString();
}

void PredictionView::updateImageList() {
  if (!predictions_) return;
  const QSignalBlocker block(images_);
  const double t = scoreThreshold();
  const bool fill = images_->count() != static_cast<int>(predictions_->images.size());
  if (fill) images_->clear();
  for (size_t i = 0; i < predictions_->images.size(); ++i) {
    const PredictedImage& image = predictions_->images[i];
    size_t shown = 0;
    for (const Prediction& p : image.predictions)
      shown += p.score >= t;
    const QString name =
        image.file_name.isEmpty() ? tr("image %1").arg(image.image_id) : image.file_name;
    const QString text =
        QStringLiteral("%1  (%2/%3)").arg(name).arg(shown).arg(image.predictions.size());
    if (fill)
      images_->addItem(text);
    else
      images_->item(static_cast<int>(i))->setText(text);
  }
  images_->setCurrentRow(current_);
}

void PredictionView::selectImage(int index) {
  if (!predictions_ || index < 0 || index >= static_cast<int>(predictions_->images.size())) return;
  current_ = index;
  {
    const QSignalBlocker block(images_);
    images_->setCurrentRow(index);
  }
  const uint64_t generation = ++image_generation_;
  const auto predictions = predictions_;
  const auto truth = truth_;
  const QString path = imageFilePath(predictions_->images[static_cast<size_t>(index)]);
  runInBackground(
      pool_, this,
      [predictions, truth, index, path] {
        LoadedImage out;
        const PredictedImage& image = predictions->images[static_cast<size_t>(index)];
        ImageFile file = readImageFile(path);
        out.image = std::move(file.image);
        out.predictions = predictionInstances(image, predictions->category_names);
        if (truth) {
          // The engine's file names first (its ids number the images it was given), then ids.
          std::optional<uint32_t> found;
          const QString base = QFileInfo(image.file_name).fileName();
          if (!base.isEmpty()) {
            const auto images = truth->images();
            for (uint32_t i = 0; i < images.size() && !found; ++i) {
              const auto& f = images[i].file_name;
              if (QFileInfo(QString::fromUtf8(f.data(), static_cast<qsizetype>(f.size())))
                      .fileName() == base)
                found = i;
            }
          } else {
            found = truth->imageIndex(image.image_id);
          }
          if (found) {
            out.truth = groundTruthInstances(*truth, *found);
            out.has_truth = true;
          }
        }
        if (out.image.isNull()) {
          out.error = file.problem;
          // Blank canvas the size of the masks, so the overlays still show.
          QSize size(640, 480);
          for (const Prediction& p : image.predictions)
            if (p.mask) size = QSize(static_cast<int>(p.mask->w), static_cast<int>(p.mask->h));
          out.image = QImage(size, QImage::Format_RGB32);
          out.image.fill(QColor(96, 96, 96));
        }
        return out;
      },
      [this, generation, index, path](LoadedImage loaded) {
        if (generation != image_generation_) return;
        all_predictions_ = std::move(loaded.predictions);
        prediction_view_->setImage(loaded.image);
        truth_view_->setImage(loaded.image);
        truth_view_->setInstances(std::move(loaded.truth));
        QString caption = QFileInfo(path).fileName();
        if (!loaded.error.isEmpty())
          caption += tr(" — cannot read the image: %1").arg(loaded.error);
        truth_view_->setCaption(loaded.has_truth ? tr("Ground truth — %1").arg(caption)
                                                 : tr("No ground truth for %1").arg(caption));
        file_caption_ = caption;
        refreshViews();
        emit imageShown(index);
      });
}

void PredictionView::refreshViews() {
  const QString& caption = file_caption_;
  if (mode_ == Mode::GroundTruth) {
    // The one view shows what the truth view holds.
    prediction_view_->setInstances(truth_view_->instances());
    prediction_view_->setCaption(
        truth_view_->instances().empty() && !truth_
            ? tr("No ground truth: open the results with an annotation file")
            : tr("Ground truth — %1").arg(caption));
    return;
  }
  std::vector<OverlayInstance> shown = aboveThreshold(all_predictions_, scoreThreshold());
  const size_t n = shown.size();
  prediction_view_->setInstances(std::move(shown));
  if (!caption.isEmpty())
    prediction_view_->setCaption(tr("Predictions — %1 — %2 of %3 at score ≥ %4")
                                     .arg(caption)
                                     .arg(n)
                                     .arg(all_predictions_.size())
                                     .arg(scoreThreshold(), 0, 'f', 2));
}

}  // namespace mrcnn::ui

// The dataset browser: a COCO json and its image folder as a thumbnail grid (filtered by
// category, image id or file name) beside an image view with the ground truth drawn over it
// (masks in per-category colours, boxes, labels, crowd regions hatched; each layer toggled,
// masks' opacity adjustable), and a Statistics tab with the dataset check of the file. The json is
// read, thumbnails and the selected image decoded, and its masks rasterised in worker threads: the
// window stays live while a large dataset opens.
#pragma once

#include <QThreadPool>
#include <QWidget>
#include <cstdint>
#include <memory>

#include "dataset/stats/dataset_stats.h"
#include "review/annotation_set.h"
#include "ui/common/overlay.h"

class QComboBox;
class QPushButton;
class QStackedWidget;
class QLabel;
class QLineEdit;
class QListView;
class QTabWidget;

namespace mrcnn::ui {

struct BrowsedDataset;
class AnnotationEditor;
class DatasetStatsView;
class ImageListModel;
class ImageView;
class LayerControls;
class ThumbnailCache;

class DatasetBrowser : public QWidget {
  Q_OBJECT

 public:
  explicit DatasetBrowser(QWidget* parent = nullptr);
  ~DatasetBrowser() override;

  // The dataset shown, null until one has loaded.
  std::shared_ptr<const BrowsedDataset> dataset() const;
  bool isLoading() const { return loading_ > 0; }

  // Narrow the grid: a category id (-1: all) and an id or file-name text.
  void setCategoryFilter(int64_t category_id);
  void setTextFilter(const QString& text);
  // Shows an image by id (selects it in the grid when the filter lets it through).
  bool selectImage(int64_t image_id);
  int64_t currentImageId() const { return current_image_id_; }

  ImageListModel* model() const { return model_; }
  QListView* grid() const { return grid_; }
  ImageView* imageView() const { return view_; }
  AnnotationEditor* editor() const { return editor_; }
  // Edit mode: the shown image's annotations in the annotation editor; every change goes to
  // the file's journal (<json>.changes.jsonl; the file itself is never written) and the
  // browser shows the annotations as edited from then on. Save Reviewed Copy writes them
  // beside the file.
  void setEditing(bool on);
  bool editing() const;
  // The edits of the open file (null before the first edit mode, or when its journal was
  // there before: then opened with the file).
  const review::AnnotationSet* edits() const { return edits_.get(); }
  QString saveReviewed(QString* error = nullptr);
  LayerControls* layerControls() const { return layers_; }
  // The Statistics tab (the dataset check of the file) and the tabs it sits in.
  DatasetStatsView* statsView() const { return stats_; }
  QTabWidget* tabs() const { return tabs_; }
  void showStatistics();
  QString statusText() const;

 public slots:
  void openDataset(const QString& annotationsJson, const QString& imageDir);
  // The spec's dataset of a split ("train" or "val"): its json and image folder, or the
  // shapes dataset's files. False, with the reason on the status line and in datasetLoaded,
  // when the spec has errors or names no such files (the shapes dataset appears after the
  // first training run generates it).
  // Its Statistics tab checks the spec's anchors and resize.
  bool openSpecDataset(const QString& specPath, const QString& split = QStringLiteral("val"));
  // Asks for a json and an image folder with file dialogs.
  void chooseDataset();

 signals:
  // After openDataset: ok false with the reader's message when the json cannot be used.
  void datasetLoaded(bool ok, const QString& message);
  // The image and its overlays are on screen.
  void imageShown(qint64 image_id);

 private:
  void openWithAnchors(const QString& annotationsJson, const QString& imageDir,
                       const dataset::AnchorCoverageOptions& anchors, const QString& source);
  void datasetReady(std::shared_ptr<const BrowsedDataset> dataset, const QString& error);
  void fillCategories();
  void applyFilter();
  void showRow(int row);
  void leaveEditor();  // back to the view, without drawing again

  QThreadPool pool_;  // the json and the selected image; thumbnails have their own
  ThumbnailCache* thumbnails_;
  ImageListModel* model_;
  QComboBox* category_;
  QLineEdit* search_;
  QListView* grid_;
  QLabel* count_;
  DatasetStatsView* stats_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  QLabel* status_;
  ImageView* view_;
  AnnotationEditor* editor_;
  QStackedWidget* image_stack_;
  QPushButton* edit_;
  QPushButton* save_;
  std::unique_ptr<review::AnnotationSet> edits_;
  LayerControls* layers_;
  int loading_ = 0;
  uint64_t open_generation_ = 0;   // a later openDataset wins over an earlier one
  uint64_t image_generation_ = 0;  // the last selected image wins
  int64_t current_image_id_ = -1;
};

}  // namespace mrcnn::ui

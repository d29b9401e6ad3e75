// The prediction view: pick a spec and a checkpoint, run inference through the engine on the
// current image or a folder, and look at OUT/results.json: predicted masks, boxes, labels and
// scores drawn over each image, hidden below a score threshold (a slider), with the ground
// truth shown instead of, or beside, the predictions when an annotation file is given.
#pragma once

#include <QThreadPool>
#include <QWidget>
#include <memory>
#include <vector>

#include "ui/common/overlay.h"
#include "ui/predictions/prediction_results.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QSlider;

namespace mrcnn::dataset {
class CocoDataset;
}

namespace mrcnn::ui {

class ImageView;
class InferenceRunner;
class LayerControls;

class PredictionView : public QWidget {
  Q_OBJECT

 public:
  enum class Mode { Predictions, GroundTruth, SideBySide };

  explicit PredictionView(QWidget* parent = nullptr);
  ~PredictionView() override;

  QString spec() const;
  QString checkpoint() const;
  // The inference backend: "libtorch" or "openvino".
  QString backend() const;
  void setBackend(const QString& backend);
  // With OpenVINO: the exported model it runs (model.onnx or model.int8.onnx of an export);
  // empty: the checkpoint, exported on the fly.
  QString exportedModel() const;
  void setExportedModel(const QString& path);
  // Tiled inference: the tile's side, 0 for none.
  int tileSize() const;
  void setTiles(int size, double overlap);
  // The image the "current image" run uses: the one shown, else the last chosen file.
  QString currentImagePath() const;

  double scoreThreshold() const;
  void setScoreThreshold(double threshold);  // 0..1, moves the slider
  Mode mode() const { return mode_; }
  void setMode(Mode mode);

  // The loaded results, null before showResults.
  const PredictionSet* predictions() const { return predictions_.get(); }
  int currentImage() const { return current_; }
  void selectImage(int index);  // index into predictions()->images

  ImageView* predictionImageView() const { return prediction_view_; }
  ImageView* groundTruthImageView() const { return truth_view_; }
  QSlider* thresholdSlider() const { return threshold_; }
  QString statusText() const;
  QPushButton* draftButton() const { return draft_; }
  QString logText() const;  // the engine's output of the last inference
  // The images the list is limited to (showImages), empty when it shows all.
  QList<qint64> imageFilter() const { return filter_; }
  QString imageFilterText() const;

 public slots:
  void setSpec(const QString& path);
  void setCheckpoint(const QString& path);
  // Loads a results file (reading and mask decoding off the UI thread); `imageDir` is the
  // path file names are relative to (the --images folder); `annotations`, when given, is the
  // ground truth to show beside (images matched by file name, else by id).
  void showResults(const QString& resultsJson, const QString& imageDir,
                   const QString& annotations = QString());
  // Ground truth shown beside the predictions of later runs (a COCO json; empty: none).
  void setAnnotations(const QString& path);
  // Where each inference writes its OUT folder (a timestamped folder under it); default: the
  // application's local data folder.
  void setOutputRoot(const QString& dir);
  void runOnCurrentImage();  // the image shown, else asks for one
  void runOnImage(const QString& file);
  void runOnFolder(const QString& folder = QString());  // empty: asks for one
  // Lists only the images of `ids` (the analysis view's confusion cell or error images),
  // loading `results` over `imageDir` first when another file is shown; selects the first of
  // `ids` that has detections. `caption` says what they are.
  void showImages(const QList<qint64>& ids, const QString& caption, const QString& results,
                  const QString& imageDir, const QString& annotations);
  void clearImageFilter();

 signals:
  void resultsLoaded(bool ok, const QString& message);
  // "Edit as Draft": the last inference's detections as annotations (draft_annotations.json
  // in its OUT folder, at the score threshold the run had) to correct in the editor.
  void editDraft(const QString& draft_json, const QString& image_dir);
  void imageShown(int index);
  void inferenceFinished(bool ok, const QString& message);

 private:
  void runInference(const QString& images);
  void refreshViews();
  void updateImageList();
  void applyImageFilter();
  QString imageFilePath(const PredictedImage& image) const;

  QThreadPool pool_;
  InferenceRunner* runner_;
  QLineEdit* spec_;
  QLineEdit* checkpoint_;
  QComboBox* backend_;
  QLineEdit* onnx_;     // the exported model OpenVINO runs, if any
  QWidget* onnx_row_;   // enabled with the OpenVINO backend
  QCheckBox* tile_;  // tiled inference, with its side and overlap
  QSpinBox* tile_size_;
  QDoubleSpinBox* tile_overlap_;
  QPushButton* run_image_;
  QPushButton* run_folder_;
  QPushButton* stop_;
  QPushButton* draft_;
  QString draft_json_, draft_images_;  // the last finished inference's draft
  QListWidget* images_;
  QComboBox* mode_box_;
  QSlider* threshold_;
  QLabel* threshold_label_;
  LayerControls* layers_;
  ImageView* prediction_view_;
  ImageView* truth_view_;
  QLabel* status_;
  QPlainTextEdit* log_;
  QWidget* filter_bar_;
  QLabel* filter_label_;

  std::shared_ptr<const PredictionSet> predictions_;
  std::shared_ptr<const dataset::CocoDataset> truth_;
  QString image_dir_;
  QString annotations_;
  QString output_root_;
  QString last_image_file_;
  QString file_caption_;  // the shown image's file name, and why it could not be read
  QList<qint64> filter_;
  QString filter_caption_;
  bool keep_filter_on_load_ = false;
  int current_ = -1;
  Mode mode_ = Mode::Predictions;
  uint64_t load_generation_ = 0;
  uint64_t image_generation_ = 0;
  // The current image's detections, all of them; the threshold filters without decoding.
  std::vector<OverlayInstance> all_predictions_;
};

}  // namespace mrcnn::ui

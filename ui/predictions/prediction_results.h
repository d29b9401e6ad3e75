// The engine's inference output read for the prediction view: OUT/results.json (COCO results
// format plus each detection's "file_name", relative to the --images path) and
// OUT/categories.json ([{"id", "name"}]). Plain data, read without widgets.
#pragma once

#include <QHash>
#include <QString>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include "dataset/mask/rle.h"
#include "ui/common/overlay.h"

namespace mrcnn::ui {

struct Prediction {
  int64_t image_id = 0;
  QString file_name;  // empty when the file has none (a plain COCO results file)
  int64_t category_id = 0;
  QRectF box;  // x, y, w, h
  double score = 0;
  std::optional<dataset::Rle> mask;
};

// One image's detections, in file order.
struct PredictedImage {
  int64_t image_id = 0;
  QString file_name;
  std::vector<Prediction> predictions;
};

struct PredictionSet {
  QString path;
  std::vector<PredictedImage> images;  // in order of first appearance in the file
  QHash<qint64, QString> category_names;
  size_t count = 0;  // detections in all
};

// A results file that cannot be used: the message names the file and the place in it
// ("results.json: [3].bbox: expected 4 numbers").
class PredictionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads results.json and, when it exists beside it, categories.json. Throws PredictionError.
PredictionSet readPredictions(const QString& results_json);

// The overlay of one image's detections with a score of at least `threshold`, labelled
// "<category> 0.93", masks decoded (slow for many detections: call from a worker).
std::vector<OverlayInstance> predictionInstances(const PredictedImage& image,
                                                 const QHash<qint64, QString>& category_names,
                                                 double threshold = 0);

// The instances of `all` with a score of at least `threshold`.
std::vector<OverlayInstance> aboveThreshold(const std::vector<OverlayInstance>& all,
                                            double threshold);

}  // namespace mrcnn::ui

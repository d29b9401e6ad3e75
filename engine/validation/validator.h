// Evaluation of a model on the validation set, in memory: the spec's eval_samples first
// images through the evaluation loader, detections mapped back to the original images and
// scored with the COCO evaluation (engine/eval), bbox and segm.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dataset/coco/coco.h"
#include "dataset/loader/loader.h"
#include "eval/evaluator.h"
#include "engine/inference/image_input.h"
#include "engine/inference/tile_options.h"
#include "engine/model/mask_rcnn.h"
#include "engine/runtime/precision.h"
#include "engine/model/loss_values.h"

namespace mrcnn::dist {
class ProcessGroup;
}

namespace mrcnn::engine {

// One validation image as the model saw it (resized), its detections scoring at least 0.5
// drawn on it (masks, boxes, "name score"), PNG-encoded: what visualize_images_summary shows.
struct ValidationOverlay {
  int64_t image_id = 0;
  std::string png;
};

struct ValidationResult {
  eval::EvaluationReport report;
  // The losses training computes, on the validation images: each component the mean over
  // everything all the images sampled (what one batch of them all would give: anchors for
  // the RPN's, RoIs for the classifier and box regression, positive RoIs for the mask), the
  // total with the spec's loss weights. Each image draws its samples from a fixed key of its
  // own, so the same weights give the same losses at every evaluation and on any number of
  // ranks. Set when the validator computes them (on rank 0).
  std::optional<train::LossValues> losses;
  std::vector<ValidationOverlay> overlays;  // the first setOverlayImages() images (rank 0's)
  uint64_t images = 0;
  double seconds = 0;
  std::vector<dataset::LoaderWarning> warnings;
};

// What the training run draws at each evaluation when the spec's visualize_images_summary is
// on.
inline constexpr size_t kOverlayImagesPerEvaluation = 4;

class Validator {
 public:
  // `ground_truth`: the validation json; `source` its samples; `options` the evaluation
  // loader's (training false).
  Validator(std::shared_ptr<const dataset::CocoDataset> ground_truth,
            std::shared_ptr<const dataset::SampleSource> source, dataset::LoaderOptions options,
            bool with_masks, bool labels_are_ids = false);

  // Runs the model (switched to evaluation mode and back to its previous mode). With a
  // process group, each rank runs every size()-th image, the detections are gathered to
  // rank 0 in file order and evaluated there once: the same numbers as one process. Other
  // ranks get an empty report; `images` counts every rank's.
  ValidationResult run(model::MaskRCNNImpl& model, const c10::Device& device,
                       dist::ProcessGroup* group = nullptr) const;

  // Whether run() also computes the losses (on by default): the same forward pass as the
  // detections, plus the loss heads on training's sampled RoIs; the loader then rasterises
  // the ground-truth masks.
  void setComputeLosses(bool on) { compute_losses_ = on; }

  // How many images run() draws its detections on (ValidationResult::overlays; 0 by default):
  // the first it meets (on rank 0, the first of its share).
  void setOverlayImages(size_t count) { overlay_images_ = count; }

  // The precision the model runs in (the spec's use_amp / amp_dtype); fp32 by default.
  void setPrecision(Precision precision) { precision_ = std::move(precision); }

  // Large images (the spec's data_config tile_size > 0): run() cuts each validation image
  // into tiles that go through the model as `--task evaluate --tile` runs them (engine/
  // inference/tiled_backend.h, at `input`'s resize), the detections merged in the image's
  // pixels. No losses and no overlays then (they are of the loader's resized images).
  void setTiles(TileOptions tiles, InputOptions input) {
    tiles_ = tiles;
    tile_input_ = input;
  }
  bool tiled() const { return tiles_.size > 0; }

  const dataset::CocoDataset& groundTruth() const { return *ground_truth_; }
  // Where the ground truth and images live: copied into each report (the metrics file's
  // "dataset", which the GUI's analysis view opens images from).
  void setDatasetPaths(std::string annotations_file, std::string image_dir) {
    annotations_file_ = std::move(annotations_file);
    image_dir_ = std::move(image_dir);
  }
  // Category ids by label (index 0 unused): the source's contiguous numbering, or the labels
  // themselves when they are category ids (torchvision's COCO models).
  const std::vector<int64_t>& categoryIds() const { return category_ids_; }

 private:
  struct Collected;
  void detectBatches(model::MaskRCNNImpl& model, const c10::Device& device,
                     dist::ProcessGroup* group, ValidationResult& result,
                     Collected& collected) const;
  void detectTiles(model::MaskRCNNImpl& model, const c10::Device& device,
                   dist::ProcessGroup* group, ValidationResult& result,
                   Collected& collected) const;

  std::shared_ptr<const dataset::CocoDataset> ground_truth_;
  std::shared_ptr<const dataset::SampleSource> source_;
  dataset::LoaderOptions options_;
  bool with_masks_;
  std::vector<int64_t> category_ids_;
  std::string annotations_file_, image_dir_;
  std::unique_ptr<eval::CocoEvaluator> evaluator_;
  Precision precision_;
  bool compute_losses_ = true;
  size_t overlay_images_ = 0;
  std::map<int64_t, std::string> category_names_;
  TileOptions tiles_;
  InputOptions tile_input_;
};

}  // namespace mrcnn::engine

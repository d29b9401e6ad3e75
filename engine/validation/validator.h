// Evaluation of a model on the validation set, in memory: the spec's eval_samples first
// images through the evaluation loader, detections mapped back to the original images and
// scored with the COCO evaluation (engine/eval), bbox and segm.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataset/coco/coco.h"
#include "dataset/loader/loader.h"
#include "engine/eval/evaluator.h"
#include "engine/model/mask_rcnn.h"
#include "engine/setup/precision.h"

namespace mrcnn::dist {
class ProcessGroup;
}

namespace mrcnn::engine {

struct ValidationResult {
  eval::EvaluationReport report;
  uint64_t images = 0;
  double seconds = 0;
  std::vector<dataset::LoaderWarning> warnings;
};

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

  // The precision the model runs in (the spec's use_amp / amp_dtype); fp32 by default.
  void setPrecision(Precision precision) { precision_ = std::move(precision); }

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
  std::shared_ptr<const dataset::CocoDataset> ground_truth_;
  std::shared_ptr<const dataset::SampleSource> source_;
  dataset::LoaderOptions options_;
  bool with_masks_;
  std::vector<int64_t> category_ids_;
  std::string annotations_file_, image_dir_;
  std::unique_ptr<eval::CocoEvaluator> evaluator_;
  Precision precision_;
};

}  // namespace mrcnn::engine

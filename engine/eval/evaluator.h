// The evaluation the training loop calls every num_steps_per_eval steps: ground truth is
// prepared once (masks rasterised once), detections come in memory, no json round trip.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dataset/coco/coco.h"
#include "engine/eval/coco_eval.h"
#include "engine/eval/confusion.h"

namespace mrcnn::eval {

struct EvaluationReport {
  std::optional<EvalResult> bbox;
  std::optional<EvalResult> segm;
  // With background, IoU 0.5 and score 0.5 (confusion.h), for the same detections.
  std::optional<ConfusionMatrix> bbox_confusion;
  std::optional<ConfusionMatrix> segm_confusion;
};

// Evaluates `detections` against `set` as `type` and puts the result and its confusion
// matrix into `report` (the bbox or segm entries); returns the result.
const EvalResult& evaluateInto(EvaluationReport& report, const EvalSet& set,
                               std::span<const Detection> detections, IouType type,
                               const EvalParams& params = {});

class CocoEvaluator {
 public:
  // `with_masks` prepares segm evaluation too. `images`: the images evaluated (the spec's
  // eval_samples picks the first N of the file); empty means all of them.
  CocoEvaluator(const dataset::CocoDataset& ground_truth, bool with_masks,
                std::vector<int64_t> images = {});

  // Detections of the evaluated images, in any order: ids are given here 1..N in the order
  // passed, which decides ties of equal scores as pycocotools' loadRes order would.
  EvaluationReport evaluate(std::vector<Detection> detections, const EvalParams& params = {}) const;

  const std::vector<int64_t>& imageIds() const { return bbox_set_.image_ids; }

 private:
  EvalSet bbox_set_;  // ground truth without masks
  EvalSet segm_set_;  // ground truth with masks (empty unless with_masks)
  bool with_masks_;
};

// Writes {"bbox": {"stats": [...], "per_category": {"<id>": ap}, "pr_curves": {"<id>":
// {"0.50": [101 precisions], "0.75": [...]}}, "thresholds": {"iou": 0.5, "categories":
// {"<id>": {"score", "precision", "recall", "f1"} or null}}, "confusion": {"categories":
// [ids], "iou": 0.5, "score": 0.5, "matrix": [[K + 1 counts]...]}}, "segm": {...}} (curves.h,
// confusion.h).
std::string metricsJson(const EvaluationReport& report);

}  // namespace mrcnn::eval

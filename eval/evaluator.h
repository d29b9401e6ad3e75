// The evaluation the training loop calls every num_steps_per_eval steps: ground truth is
// prepared once (masks rasterised once), detections come in memory, no json round trip.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dataset/coco/coco.h"
#include "eval/coco_eval.h"
#include "eval/confusion.h"
#include "eval/tide.h"

namespace mrcnn::eval {

struct EvaluationReport {
  std::optional<EvalResult> bbox;
  std::optional<EvalResult> segm;
  // With background, IoU 0.5 and score 0.5 (confusion.h), for the same detections.
  std::optional<ConfusionMatrix> bbox_confusion;
  std::optional<ConfusionMatrix> segm_confusion;
  // TIDE's error breakdown at IoU 0.5 (tide.h), for the same detections.
  std::optional<TideResult> bbox_tide;
  std::optional<TideResult> segm_tide;
  std::map<int64_t, std::string> category_names;  // the ground truth's, for readers
  // Where the evaluated data lives, for readers that show its images (empty: unknown).
  std::string annotations_file;
  std::string image_dir;
};

// How many of the images with the most TIDE errors the metrics file lists.
inline constexpr std::size_t kTideImagesListed = 1000;

// Evaluates `detections` against `set` as `type` and puts the result and its confusion
// matrix and TIDE errors into `report` (the bbox or segm entries); returns the result.
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
  std::map<int64_t, std::string> category_names_;
};

// Writes {"bbox": {"stats": [...], "per_category": {"<id>": ap}, "pr_curves": {"<id>":
// {"0.50": [101 precisions], "0.75": [...]}}, "pr_scores": {"<id>": {"0.50": [101 scores]}},
// "thresholds": {"iou": 0.5, "categories":
// {"<id>": {"score", "precision", "recall", "f1"} or null}}, "confusion": {"categories":
// [ids], "iou": 0.5, "score": 0.5, "matrix": [[K + 1 counts]...], "images": [[row, column,
// [image ids]]...]}, "tide": {"iou": 0.5, "background_iou": 0.1, "max_dets": 100, "ap",
// "main": {"Cls", "Loc", "Both", "Dupe", "Bkg", "Miss"}, "special": {"FalsePos", "FalseNeg"},
// "counts": {by type}, "images": [{"image_id", "errors", "counts": {by type}}, most errors
// first, at most kTideImagesListed]}}, "segm": {...}, "category_names": {"<id>": name},
// "dataset": {"annotations": file, "images": folder}} (curves.h, confusion.h, tide.h; names
// and dataset only where the report has them).
std::string metricsJson(const EvaluationReport& report);

}  // namespace mrcnn::eval

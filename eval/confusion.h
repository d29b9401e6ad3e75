// The confusion matrix with background, for error analysis: which class each ground-truth
// object was detected as, which objects were missed, and which detections matched nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "eval/coco_eval.h"

namespace mrcnn::eval {

struct ConfusionMatrix {
  std::vector<int64_t> category_ids;  // the K classes, sorted (the evaluation's K axis)
  double iou = 0.5;
  double score = 0.5;
  // (K + 1) x (K + 1), row-major. Row i < K: ground truths of class i (crowds excluded), by
  // the predicted class of the detection matched to them, the last column counting those no
  // detection matched (missed); each such row adds up to the class's ground truths. Last row:
  // detections that matched no ground truth (background), by predicted class.
  std::vector<int64_t> counts;
  // Per cell (same layout), the images behind its counts, in the set's image order: what
  // the analysis view opens when a cell is clicked.
  std::vector<std::vector<int64_t>> images;

  int64_t at(std::size_t row, std::size_t col) const {
    return counts[row * (category_ids.size() + 1) + col];
  }
};

// Per image of set.image_ids (groupByImage): detections scoring at least `score`, highest first
// (file order on ties), each matched greedily to the unmatched non-crowd ground truth of any class
// with the largest IoU, at least `iou` (the first on ties); a detection that matches none but
// overlaps a crowd region by `iou` (pycocotools' crowd rule) is ignored, as COCOeval ignores
// it. Boxes or masks as `type` says (masks must be set for Segm).
ConfusionMatrix confusionMatrix(const EvalSet& set, std::span<const Detection> detections,
                                IouType type, double iou = 0.5, double score = 0.5);

}  // namespace mrcnn::eval

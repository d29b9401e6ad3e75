// The ground truth and detections of one image, grouped for the per-image error analyses
// (the confusion matrix and TIDE), and the IoU between them.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "dataset/mask/rle.h"
#include "eval/coco_eval.h"

namespace mrcnn::eval {

struct ImageItems {
  int64_t image_id = 0;
  std::vector<const GroundTruth*> objects;   // non-crowd ground truth, file order
  std::vector<const GroundTruth*> crowds;    // crowd regions, file order
  std::vector<const Detection*> detections;  // highest score first, file order on ties
};

// One entry per image of set.image_ids, in that order. Ground truth and detections of
// categories outside set.category_ids, detections scoring below `min_score` and those on
// images outside the set are left out; an image keeps at most `max_detections` detections
// (the highest scoring) when it is not 0.
std::vector<ImageItems> groupByImage(const EvalSet& set, std::span<const Detection> detections,
                                     double min_score = 0, std::size_t max_detections = 0);

// IoU of each detection against each ground truth of `gts`, boxes or masks as `type` says,
// with pycocotools' crowd rule (intersection over the detection's area) when `crowd`.
dataset::IouMatrix detectionIous(const std::vector<const Detection*>& dts,
                                 const std::vector<const GroundTruth*>& gts, IouType type,
                                 bool crowd);

}  // namespace mrcnn::eval

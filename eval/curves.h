// Per-class precision-recall curves and score thresholds, read from an evaluation's
// accumulated arrays (pycocotools' eval['precision'] and eval['scores']): what the metrics
// file carries for error analysis and per-class thresholds for inference.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "eval/coco_eval.h"

namespace mrcnn::eval {

// pycocotools' precision[t, :, k, area "all", largest maxDets] at the IoU threshold `iou`
// (one of the evaluation's), over the recall thresholds: exactly its values, -1 where it has
// -1 (a category without ground truth). Throws std::invalid_argument for an IoU the
// evaluation does not have.
std::vector<double> precisionCurve(const EvalResult& result, std::size_t k, double iou);

// pycocotools' scores[t, :, k, area "all", largest maxDets]: per recall threshold, the score
// of the detection at which it is reached (0 where it is not): keeping detections at or
// above it gives that point of the curve.
std::vector<double> scoreCurve(const EvalResult& result, std::size_t k, double iou);

// The point a score threshold gives on a curve (precisionCurve and scoreCurve of the same
// IoU): the last recall index whose precision is positive and whose score is at least
// `score`, that is what keeping the detections scoring at least `score` reaches; -1 when it
// reaches none. What the GUI's dragged threshold and TensorBoard's PR curves read.
int recallIndexAtScore(std::span<const double> precision, std::span<const double> scores,
                       double score);

struct ScoreThreshold {
  double score = 0;      // keep detections scoring at least this
  double precision = 0;  // pycocotools' interpolated precision at that recall
  double recall = 0;     // the recall threshold reached
  double f1 = 0;
};

// The point of the curve at `iou` with the largest F1 = 2PR / (P + R) (the first, that is
// the highest score, on ties), and the score at which its recall is first reached
// (pycocotools' eval['scores']). None for a category without ground truth or without a
// true positive.
std::optional<ScoreThreshold> bestF1Threshold(const EvalResult& result, std::size_t k,
                                              double iou = 0.5);

}  // namespace mrcnn::eval

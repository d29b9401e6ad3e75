// TIDE's error breakdown (Bolya et al., "TIDE: A General Toolbox for Identifying Object
// Detection Errors", ECCV 2020) as the tidecv package computes it: why AP at one IoU is
// lost, in AP points each error type would give back if fixed (dAP).
//
// Per image: detections sorted by score (file order on ties), the first max_dets kept
// across classes; each matched in that order to the ground truth of its class with the
// largest IoU (the first on ties) if at least `pos_iou`; an unmatched one overlapping a
// crowd region of its class by more than `pos_iou` (crowd IoU) is ignored. Every unmatched
// or ignored detection gets the first error that applies:
//   Bkg   the image has no (non-crowd) ground truth;
//   Loc   its best IoU with its own class is in [bg, pos];
//   Cls   its best IoU with another class is at least pos;
//   Dupe  its best IoU with an already matched object of its class is at least pos;
//   Bkg   its best IoU with any object is at most bg;
//   Both  none of these.
// Objects no detection matched and no Loc/Cls error could fix are Miss. Fixing Loc or Cls
// turns the highest-scoring such detection of an object into a true positive (of the
// object's class for Cls) and drops the others; fixing Dupe, Bkg or Both drops those
// detections; fixing Miss removes the object. dAP = max(AP fixed - AP, 0), one type at a
// time. FalsePos: every true positive ranked above every false positive; FalseNeg: every
// missed object removed. AP is TIDE's: per class over all images (a class with detections
// and no ground truth counts 0), 101 recall points, mean over classes; in points (0-100).
// Ground truth and detections of categories outside the set take no part.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "eval/coco_eval.h"

namespace mrcnn::eval {

enum class TideError { Cls, Loc, Both, Dupe, Bkg, Miss };
inline constexpr std::array<std::string_view, 6> kTideErrorNames = {"Cls",  "Loc", "Both",
                                                                    "Dupe", "Bkg", "Miss"};

struct TideImage {
  int64_t image_id = 0;
  std::array<int64_t, 6> counts{};  // errors by TideError
  int64_t total = 0;
};

struct TideResult {
  double pos_iou = 0.5;
  double background_iou = 0.1;
  int max_dets = 100;
  double ap = 0;                     // TIDE's mAP at pos_iou, in points
  std::array<double, 6> main_dap{};  // by TideError
  double false_positive_dap = 0;
  double false_negative_dap = 0;
  std::array<int64_t, 6> counts{};  // errors by TideError
  // Images with at least one error, most errors first (the set's image order on ties).
  std::vector<TideImage> images;
};

// Detections are read in the given order (file order): it breaks ties of equal scores.
// Images are visited in set.image_ids' order, which breaks ties between images.
TideResult tideErrors(const EvalSet& set, std::span<const Detection> detections, IouType type,
                      double pos_iou = 0.5, double background_iou = 0.1, int max_dets = 100);

}  // namespace mrcnn::eval

namespace mrcnn::eval {

// Two table lines as TIDE prints them: the main errors' dAP, then the special ones.
std::string tideSummaryText(const TideResult& t);

}  // namespace mrcnn::eval

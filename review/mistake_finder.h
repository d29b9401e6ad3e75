// Likely label mistakes from a model's detections: where the annotations and confident
// detections disagree in a way that a careful model rarely does, ranked on one score (0..1)
// that a reviewer walks down whatever the kind. No Torch, no Qt: the label_check task writes
// what it finds (mistakes_json.h) and the GUI's review reads it.
//
// The overlap of an annotation and a detection is the smaller of their box IoU and (when both
// have masks) mask IoU: a box moved off its object and a polygon coarsened inside its box
// both lower it. Per image, detections (highest score first) are matched to unmatched
// annotations of their class as COCO's evaluation matches them (overlap >= match_iou). Then:
//  - missing: a detection left unmatched, confident on its own or with the other classes'
//    unmatched detections of the same object (a hedging model: each class's best score there
//    combined as independent chances), not near an unmatched annotation of its class,
//    overlapping no annotation of any class by match_iou and inside no crowd region (by the
//    region's box); one entry an object.
//    score = that confidence x (1 - the larger of the best overlap with any annotation and half
//    the share of its box inside an annotation's box: a detection inside an annotated
//    object is more often the model seeing a part of it than an object nobody labelled).
//  - wrong_class: an annotation under a confident detection of another class (overlap >=
//    match_iou) scoring above every detection of its own class there.
//    score = other class's confidence x (1 - own class's best confidence there), as odds
//    times the odds of the outline's vote (label_geometry.h: how much more the annotation's
//    outline looks like the other class's annotations than its own's, held to 0.05..0.95).
//  - localization: an annotation whose detection of its class draws it differently from how
//    the model usually agrees with annotations: matched with a box IoU or mask IoU far below
//    the median of the data's confident matches of objects of its size (the thirds of the
//    matches by box size; in units of their spread, the median absolute deviation), or an
//    unmatched confident detection of its class overlapping it
//    by at least localization_floor; or whose mask IoU falls short of its box IoU by more
//    than usual (a coarse or eroded polygon in the right box); or whose mask is larger or
//    smaller than the detection's, or fills its box more or less, by more than the class's
//    matches usually differ (log area ratio and fill gap, from 3 spreads off the class's
//    median to full at 12: a polygon drawn as its box, an eroded one). score = confidence x that
//    evidence (from one spread off the median, rising linearly to 1 at localization_floor,
//    or at a gap of 0.5), so a coarse model does not flag everything.
//  - spurious: an annotation no detection speaks for: support = the best, over detections
//    of any class, of min(1, confidence / confident) x the share of the annotation's box the
//    detection's box covers (from 0.1, full at 0.5; a small object the model boxes loosely is
//    still supported); score = 1 - support.
//  - duplicate: two annotations of one class overlapping by more than duplicate_iou; the
//    later (by id) is the one flagged, score = their overlap.
// A partly hidden object (other annotations' masks over its box, outside its own mask) is
// where the model most often disagrees with a right label: the visible part of a covered
// square looks like a triangle, a covered outline is drawn differently, a mostly covered
// object is missed. wrong_class, localization and spurious scores are multiplied by
// 1 - 2 x the hidden share of the box (none left at half hidden), and the detail says so.
// Crowd annotations are never flagged and detections inside one are not missing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dataset/mask/rle.h"
#include "eval/coco_eval.h"

namespace mrcnn::review {

enum class MistakeKind { kMissing, kWrongClass, kLocalization, kSpurious, kDuplicate };

// "missing", "wrong_class", "localization", "spurious", "duplicate".
const char* kindName(MistakeKind kind);
std::optional<MistakeKind> kindFromName(const std::string& name);

// What to change: the category and geometry the annotation should have (a missing one:
// the instance to add). No mask: keep the annotation's segmentation (a class change).
struct Suggestion {
  int64_t category_id = 0;
  dataset::Box bbox{};  // x, y, w, h
  std::optional<dataset::Rle> mask;
};

struct Mistake {
  int64_t image_id = 0;
  std::optional<int64_t> annotation_id;  // none for a missing annotation
  MistakeKind kind = MistakeKind::kMissing;
  double score = 0;                      // 0..1, comparable across kinds
  std::optional<Suggestion> suggestion;  // none: delete the annotation (spurious, duplicate)
  std::string detail;                    // one sentence, the numbers behind the score
};

struct FinderOptions {
  double confident = 0.5;           // a detection at least this sure is evidence on its own
  double match_iou = 0.5;           // an annotation and a detection of one object
  double localization_floor = 0.25; // below this overlap two shapes are not one object
  double duplicate_iou = 0.9;
  double min_score = 0.1;           // weaker findings are not listed
};

// The data checked: annotations as eval::groundTruthSet gives them (masks when `masks`),
// detections as eval::loadResults gives them (masks when `masks`), both on `image_ids`.
struct FinderInput {
  std::vector<int64_t> image_ids;
  std::vector<eval::GroundTruth> annotations;
  std::vector<eval::Detection> detections;
  bool masks = false;
  // Category names by id, for the details ("a dog detection (0.93) ...").
  std::vector<std::pair<int64_t, std::string>> category_names;
};

struct FinderResult {
  std::vector<Mistake> mistakes;  // by score, highest first (ties: image, annotation id)
  double typical_overlap = 0;     // the median overlap of the confident matches
  size_t confident_matches = 0;
};

FinderResult findMistakes(const FinderInput& input, const FinderOptions& options = {});

// An image's score: its highest mistake's, 0 when it has none (image-level ranking).
std::vector<std::pair<int64_t, double>> imageScores(const FinderResult& result,
                                                    const std::vector<int64_t>& image_ids);

}  // namespace mrcnn::review

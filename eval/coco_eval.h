// COCO evaluation (bbox and segm) with pycocotools' COCOeval semantics, to the last bit of
// its numbers: IoU thresholds .50:.05:.95, 101-point interpolated precision, area ranges
// all/small/medium/large, maxDets 1/10/100, crowd regions as ignore regions with the crowd
// IoU rule, pycocotools' tie order for equal scores. No Torch: the training loop, the
// evaluate task and the tests all call it with plain data.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dataset/mask/rle.h"

namespace mrcnn::eval {

enum class IouType { Bbox, Segm };

struct GroundTruth {
  int64_t id = 0;
  int64_t image_id = 0;
  int64_t category_id = 0;
  dataset::Box bbox{};  // x, y, w, h
  double area = 0;      // as written in the annotation file (pycocotools does not recompute)
  bool iscrowd = false;
  dataset::Rle mask;  // segm only: the annotation as pycocotools' annToRLE gives it
};

struct Detection {
  int64_t id = 0;  // pycocotools' loadRes numbers results 1..N in file order
  int64_t image_id = 0;
  int64_t category_id = 0;
  dataset::Box bbox{};
  double area = 0;  // loadRes: box area for box results, mask area for mask-only results
  double score = 0;
  dataset::Rle mask;  // segm only
};

// What to evaluate. Ground truths and detections are in file order: pycocotools breaks
// score ties by it. image_ids and category_ids are those of the ground-truth file (sorted
// here); detections on other images or categories take no part, as in pycocotools.
struct EvalSet {
  std::vector<int64_t> image_ids;
  std::vector<int64_t> category_ids;
  std::vector<GroundTruth> ground_truths;
  std::vector<Detection> detections;
};

struct EvalParams {
  std::vector<double> iou_thresholds;     // default: numpy.linspace(.5, .95, 10)
  std::vector<double> recall_thresholds;  // default: numpy.linspace(0, 1, 101)
  std::vector<int> max_dets = {1, 10, 100};
  std::vector<std::array<double, 2>> area_ranges = {
      {0, 1e10}, {0, 32 * 32}, {32 * 32, 96 * 96}, {96 * 96, 1e10}};
  std::vector<std::string> area_labels = {"all", "small", "medium", "large"};
  int threads = 0;  // 0: all cores

  EvalParams();
};

struct EvalResult {
  IouType iou_type = IouType::Bbox;
  // pycocotools' summarize() order: AP, AP50, AP75, APs, APm, APl, AR1, AR10, AR100, ARs,
  // ARm, ARl; -1 where nothing could be measured.
  std::array<double, 12> stats{};
  std::vector<int64_t> category_ids;    // sorted, the K axis below
  std::vector<double> per_category_ap;  // AP@[.50:.95], area all, maxDets 100; -1 if no GT
  // pycocotools' eval['precision'] [T][R][K][A][M], eval['recall'] [T][K][A][M] and
  // eval['scores'] [T][R][K][A][M], flattened in that (C) order.
  std::vector<double> precision, recall, scores;
  std::size_t T = 0, R = 0, K = 0, A = 0, M = 0;
  EvalParams params;

  double precisionAt(std::size_t t, std::size_t r, std::size_t k, std::size_t a,
                     std::size_t m) const {
    return precision[(((t * R + r) * K + k) * A + a) * M + m];
  }
  double scoreAt(std::size_t t, std::size_t r, std::size_t k, std::size_t a, std::size_t m) const {
    return scores[(((t * R + r) * K + k) * A + a) * M + m];
  }
  double recallAt(std::size_t t, std::size_t k, std::size_t a, std::size_t m) const {
    return recall[((t * K + k) * A + a) * M + m];
  }
};

// Throws std::invalid_argument when ids are duplicated.
EvalResult evaluate(const EvalSet& set, IouType type, const EvalParams& params = {});
// The same with the detections apart from the ground truth (set.detections is not read):
// a prepared ground truth is evaluated against new detections without being copied.
EvalResult evaluate(const EvalSet& set, std::span<const Detection> detections, IouType type,
                    const EvalParams& params = {});

// The 12 lines pycocotools' summarize() prints.
std::string summaryText(const EvalResult& result);

}  // namespace mrcnn::eval

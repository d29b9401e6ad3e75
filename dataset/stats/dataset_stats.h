// The dataset check run before training (--task dataset_stats): per annotation file the
// images, instances and crowds of each class, instances per image, object sizes (COCO's
// small/medium/large and a histogram of sqrt(area)), aspect ratios, image sizes and the class
// imbalance; the problems that make a run fail silently (category lists that differ between
// the train and val files, ids starting at 0 or leaving gaps and the num_classes they call
// for, unused categories, annotations the loader skipped for an unknown category id); and
// the anchor coverage: with the spec's anchors and resize, the share of ground-truth boxes of
// each size whose best anchor reaches the RPN's positive IoU, and an aspect ratio that would
// raise it. Plain data: no Torch.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dataset/coco/coco.h"

namespace mrcnn::dataset {

// The spec's anchors (TAO's parameterisation, see engine/model/anchor_generator.h) and resize.
struct AnchorCoverageOptions {
  int min_level = 2, max_level = 6, num_scales = 1;
  double anchor_scale = 8;
  std::vector<std::pair<double, double>> aspect_pairs = {{1.0, 1.0}, {1.4, 0.7}, {0.7, 1.4}};
  bool shorter_side = false;  // false: fit into the canvas (TAO's fixed mode)
  int canvas_height = 832, canvas_width = 1344;
  int min_size = 800, max_size = 1333;  // shorter-side mode
  double positive_iou = 0.7;            // rpn_positive_overlap
};

struct Histogram {
  std::vector<double> edges;  // bins [edges[i], edges[i + 1]); the last bin is closed
  std::vector<int64_t> counts;
};

struct ClassCounts {
  int64_t id = 0;
  std::string name;
  int64_t instances = 0;  // non-crowd
  int64_t crowds = 0;
  int64_t images = 0;  // images with at least one instance
};

struct AnchorCoverage {
  std::array<int64_t, 3> boxes{};    // non-crowd boxes small, medium, large (COCO areas)
  std::array<int64_t, 3> covered{};  // whose best anchor's IoU reaches the positive IoU
  std::array<double, 3> share{};     // covered / boxes (1 where there are none)
  double share_all = 1;
  double positive_iou = 0.7;  // what "covered" means
  // The (width, height) anchor factors that, added, cover the most more boxes, and the share
  // with it; none when nothing would gain.
  std::optional<std::pair<double, double>> suggested_pair;
  double share_with_suggestion = 0;
};

struct SetStats {
  std::string name;  // "train", "val" or the file
  std::string file;
  int64_t images = 0, instances = 0, crowds = 0, images_without_instances = 0;
  std::vector<ClassCounts> classes;  // in category id order
  Histogram instances_per_image;     // 0, 1, 2-3, 4-7, ... per image
  std::array<int64_t, 3> sizes{};    // small (< 32^2), medium (< 96^2), large, by area
  Histogram sqrt_area;               // 0, 8, 16, 32, 64, 128, 256, 512, inf pixels
  Histogram aspect;                  // log2(width / height) of the boxes, half-octave bins
  std::vector<std::pair<std::pair<uint32_t, uint32_t>, int64_t>> image_sizes;  // (w, h), most first
  double imbalance = 0;  // instances of the largest class over the smallest used one
  AnchorCoverage anchors;
};

struct Problem {
  std::string code;  // snake_case: categories_differ, ids_from_zero, id_gaps, ...
  std::string message;
};

struct DatasetStats {
  std::vector<SetStats> sets;
  std::vector<Problem> problems;
};

struct LabeledSet {
  std::string name;  // "train", "val", or the file's name
  std::string file;
  const CocoDataset* data = nullptr;
};

// `num_classes` and `labels_are_ids` (the spec's data_config) are checked against the
// categories: 0 skips that check.
DatasetStats datasetStats(const std::vector<LabeledSet>& sets, const AnchorCoverageOptions& anchors,
                          int64_t num_classes = 0, bool labels_are_ids = false);

// The same on annotation files, each loaded (loadCoco: CocoError names a file it cannot use)
// and named by the first of its pair ("train", "val", the file's name).
DatasetStats datasetStatsOfFiles(const std::vector<std::pair<std::string, std::string>>& files,
                                 const AnchorCoverageOptions& anchors, int64_t num_classes = 0,
                                 bool labels_are_ids = false);

// The IoU of a box of (w, h) with the best anchor of the options on the canvas, the box's
// centre at (cx, cy) of the resized image: the anchors centred on the nearest cell of each
// level (the best position for each shape).
double bestAnchorIou(double cx, double cy, double w, double h, const AnchorCoverageOptions& anchors,
                     const std::vector<std::pair<double, double>>& pairs);

// Tables for people, and stats.json.
std::string datasetStatsText(const DatasetStats& stats);
std::string datasetStatsJson(const DatasetStats& stats);

}  // namespace mrcnn::dataset

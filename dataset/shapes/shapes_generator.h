// The embedded synthetic "shapes" dataset: small COCO-format train/val splits of coloured,
// rotated, overlapping shapes on cluttered backgrounds, generated on the spot so that the
// workbench can train and evaluate end to end without downloading COCO. Deterministic: the
// same options give byte-identical files on the same platform.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <opencv2/core/mat.hpp>
#include <string_view>
#include <vector>

namespace mrcnn::dataset {

struct ShapesOptions {
  std::filesystem::path root;  // output folder
  int train_images = 400, val_images = 50;
  int min_side = 192, max_side = 320;  // each image gets its own random width and height in
                                       // [min_side, max_side]
  int max_shapes = 6;                  // 1..max_shapes shapes per image
  double clutter = 1.0;                // background blobs, lines and arcs: 1 = the usual
                                       // amount, 0 = none, 2 = twice as many
  int categories = 6;                  // shape classes used: the first N of shapesCategories()
  int min_shape_size = 12;             // smallest shape diameter in pixels (log-uniform up to
                                       // half the shorter side)
  uint32_t seed = 2026;
};

struct ShapesSplitSummary {
  int images = 0, annotations = 0, polygons = 0, rles = 0, crowds = 0;
  friend bool operator==(const ShapesSplitSummary&, const ShapesSplitSummary&) = default;
};

struct ShapesSummary {
  ShapesSplitSummary train, val;
  bool generated = false;  // false when already up to date
};

// Writes root/images/train/*.jpg, root/images/val/*.jpg, root/annotations/instances_train.json,
// root/annotations/instances_val.json, and root/shapes.stamp (the options it was made with,
// then the summary). Returns generated=false without writing when the stamp matches the
// options and all files exist; the summary then comes from the stamp. Every file is written to
// a temporary name and renamed into place, the stamp last. Throws std::invalid_argument on
// bad options, std::runtime_error with the path in the message on any I/O failure.
ShapesSummary generateShapes(const ShapesOptions& options);

// The paths the spec layer needs:
std::filesystem::path shapesImageDir(const std::filesystem::path& root,
                                     std::string_view split);  // root/images/<split>
std::filesystem::path shapesAnnotationFile(
    const std::filesystem::path& root,
    std::string_view split);  // root/annotations/instances_<split>.json

// The category names, most distinct first; category id = index + 1.
const std::array<std::string_view, 6>& shapesCategories();

// One image as generateShapes renders it, before encoding: for tests and previews.
struct ShapesInstance {
  int category_id = 0;
  bool crowd = false;  // a cluster of small same-class shapes, annotated as one region
  cv::Mat painted;     // CV_8UC1 0/1: every pixel the instance was painted on
  cv::Mat visible;     // CV_8UC1 0/1: what later shapes left of it (what is annotated)
};
struct ShapesScene {
  cv::Mat image;                          // CV_8UC3, BGR
  std::vector<ShapesInstance> instances;  // in paint order, invisible ones dropped
};
// Image `index` (0-based) of `split` ("train" or "val"). Depends only on the options' seed,
// sides and max_shapes, the split and the index: not on the order of generation.
ShapesScene renderShapesScene(const ShapesOptions& options, std::string_view split, int index);

}  // namespace mrcnn::dataset

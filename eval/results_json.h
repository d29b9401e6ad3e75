// COCO results files ([{"image_id", "category_id", "bbox", "score", "segmentation"}, ...])
// read with the semantics of pycocotools' COCO.loadRes, and ground truth turned into the
// evaluation's input as COCOeval prepares it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "dataset/coco/coco.h"
#include "eval/coco_eval.h"

namespace mrcnn::eval {

struct ResultsWarning {
  std::string message;
  std::size_t index = 0;  // the detection's position in the file
  uint64_t byte_offset = 0;
};

struct LoadedResults {
  std::vector<Detection> detections;     // ids 1..N in file order, as loadRes numbers them
  bool has_masks = false;                // results carry segmentations (segm can be evaluated)
  std::vector<ResultsWarning> warnings;  // detections of categories unknown to the ground truth
};

// Image sizes of the ground truth, by image id: results are checked against them, and box
// results get their box rasterised at that size for segm, as loadRes and annToRLE do.
using ImageSizes = std::unordered_map<int64_t, std::pair<uint32_t, uint32_t>>;  // (h, w)

// loadRes: the first result decides how all are read. With a non-empty "bbox" the area is the
// box's and a missing segmentation is left empty (has_masks false; rasterizeBoxMasks makes
// it the box polygon, as loadRes does, when segm is evaluated); otherwise "segmentation" must be
// a compressed RLE, whose area and (when absent) box are computed from it. A result on an
// image not in the ground truth is an error, as in pycocotools; on an unknown category, a
// warning (pycocotools leaves it out silently). Throws dataset::CocoError naming the file, the
// byte offset and the key path (e.g. "[12].bbox[2]: expected a number").
LoadedResults loadResults(const std::filesystem::path& path, const ImageSizes& images,
                          const std::vector<int64_t>& category_ids);

// The masks loadRes gives box results without a segmentation: each box as the polygon x1,y1,
// x1,y2, x2,y2, x2,y1 rasterised at its image's size. Only segm evaluation needs them (a
// box-only file of 500,000 results loads 5x faster without); has_masks is true afterwards.
void rasterizeBoxMasks(LoadedResults& results, const ImageSizes& images);

// The ground truth as COCOeval._prepare takes it: every annotation, masks as annToRLE gives
// them when `type` is Segm. pycocotools replaces any `ignore` flag by iscrowd; so do we.
EvalSet groundTruthSet(const dataset::CocoDataset& coco, IouType type);
ImageSizes imageSizes(const dataset::CocoDataset& coco);

}  // namespace mrcnn::eval

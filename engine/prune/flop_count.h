// What a model costs to run, counted rather than estimated: the multiply-adds of every
// convolution and matrix product LibTorch runs (RecordFunction callbacks on aten::convolution,
// aten::addmm, aten::mm and aten::bmm), and the inference cost of a Mask R-CNN at an image
// size built on that. FLOPs are 2 per multiply-add (fvcore and detectron2 print multiply-adds,
// half these numbers); element-wise operations, RoIAlign and NMS are not counted.
#pragma once

#include <ATen/record_function.h>

#include <cstdint>

#include "engine/model/mask_rcnn.h"

namespace mrcnn::prune {

// Counts the multiply-adds run on this thread while it lives (one at a time per thread).
class FlopCount {
 public:
  FlopCount();
  ~FlopCount();
  FlopCount(const FlopCount&) = delete;
  FlopCount& operator=(const FlopCount&) = delete;

  int64_t multiplyAdds() const;

 private:
  at::CallbackHandle handle_;
};

// The model's inference GFLOPs for one image of height x width (padded as the model needs):
// the backbone and the RPN head on the image, the box head and predictor on `rois` RoIs (the
// spec's test_rpn_post_nms_topn: what the RPN keeps at most), the mask head and predictor on
// `detections` detections (test_detections_per_image). Deterministic: random inputs of those
// shapes, whatever the image would detect. Leaves the model in evaluation mode.
double inferenceGflops(model::MaskRCNNImpl& net, int64_t height, int64_t width, int64_t rois,
                       int64_t detections);

}  // namespace mrcnn::prune

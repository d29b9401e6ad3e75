// Two runs' detections of one image, compared: the exported model's (OpenVINO, ONNX Runtime)
// against the engine's own. Each reference detection is paired with the unpaired detection
// of the same label whose box overlaps it most (IoU at least 0.5); a pair agrees when every
// box coordinate is within box_rel of the reference's (relative to max(1, |coordinate|)), the
// score within `score` and the masks' IoU at least mask_iou.
#pragma once

#include <cstdint>
#include <string>

#include "engine/model/postprocess.h"

namespace mrcnn::exporter {

struct ParityTolerance {
  double box_rel = 1e-3;
  double score = 1e-4;
  double mask_iou = 0.98;
  double share = 0.98;  // of the reference's detections that must agree, over all images
};

struct ImageParity {
  std::string file;
  int64_t ours = 0;
  int64_t reference = 0;
  int64_t paired = 0;
  int64_t agreed = 0;
  double worst_box_rel = 0;  // over the pairs
  double worst_score = 0;
  double worst_mask_iou = 1;
};

// Boxes xyxy in the same pixels, labels, scores; masks uint8 [K, H, W] of the same size (or
// undefined on either side: not compared).
ImageParity compareDetections(const model::ImageDetections& ours,
                              const model::ImageDetections& reference,
                              const ParityTolerance& tolerance);

}  // namespace mrcnn::exporter

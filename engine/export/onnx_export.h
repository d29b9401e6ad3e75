// The model the engine runs as one ONNX graph, image in, detections out: the spec's
// normalisation, resize and padding, backbone, FPN, RPN, RoIAlign, box and mask heads and
// post-processing, all inside (export_stages.h lists where each stage is written).
//
//   input   image   float32 [3, height, width]  RGB in 0..1, any size
//   outputs boxes   float32 [N, 4]   xyxy in the input image's pixels
//           labels  int64   [N]      the dataset's category ids
//           scores  float32 [N]      by decreasing score
//           masks   float32 [N, 1, M, M]  probabilities over each box at the mask head's
//                   resolution (M = 2 x mask RoI size): the consumer pastes them into the box
//                   (model/postprocess.h does it for the engine), thresholding at 0.5.
//
// Checked by the ONNX checker and shape inference before it is returned.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dataset/loader/transform.h"
#include "engine/model/mask_rcnn.h"

namespace mrcnn::exporter {

struct OnnxExportOptions {
  dataset::ResizeSpec resize;
  int64_t pad_multiple = 32;
  // The dataset's category id of each contiguous label (index 0, the background, unused).
  std::vector<int64_t> category_ids;
  int opset = 17;  // 16 or 17 (RoiAlign's half-pixel modes are opset 16)
  std::string producer_version;
  // Written into the model's metadata (metadata_props).
  std::vector<std::pair<std::string, std::string>> metadata;
};

struct OnnxModel {
  std::string bytes;  // the serialized ModelProto
  int64_t nodes = 0;
  int64_t initializers = 0;
  int64_t weight_bytes = 0;
};

// Throws std::invalid_argument for a model or option it cannot export, and
// std::runtime_error with the checker's message when the graph fails its checks.
OnnxModel exportOnnx(model::MaskRCNNImpl& model, const OnnxExportOptions& options);

}  // namespace mrcnn::exporter

// model.pth of an export: the model's state_dict as torchvision's maskrcnn_resnet50_fpn loads
// it with strict=True, when the model has that architecture (ResNet-50, FPN levels 2..6, one
// RPN conv, three anchors a cell, TwoMLPHead of 1024, four 256-wide mask convolutions), and
// the torchvision call that runs it as the engine does, or what no keyword can match.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "dataset/loader/transform.h"
#include "engine/model/mask_rcnn.h"
#include "engine/model/state_dict.h"

namespace mrcnn::exporter {

struct TorchvisionCompat {
  bool compatible = false;
  // Every batch norm's num_batches_tracked included (0): torchvision builds BatchNorm2d
  // without pretrained weights and FrozenBatchNorm2d with them, which drops the key.
  model::StateDict state;
  std::string note;  // how to load it, or why there is no file
  // The keyword arguments of maskrcnn_resnet50_fpn that make torchvision run it as the engine
  // does (weights and weights_backbone are None), and whether that is all it takes.
  std::vector<std::pair<std::string, double>> kwargs;
  bool same_detections = false;
};

TorchvisionCompat torchvisionCompat(model::MaskRCNNImpl& model, const dataset::ResizeSpec& resize);

}  // namespace mrcnn::exporter

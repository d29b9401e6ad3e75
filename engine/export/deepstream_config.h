// A DeepStream nvinfer configuration for model.onnx, in the layout TAO writes for its Mask
// R-CNN (a [property] group and [class-attrs-all]; key=value, '#' comments). Only documented
// nvinfer keys are used. Nothing on this project's machines runs DeepStream: the file is
// written, not tried. nvinfer has no built-in parser for these outputs (boxes, labels, scores,
// masks): parse-bbox-instance-mask-func-name must name a custom parser built for them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/export/onnx_export.h"

namespace mrcnn::exporter {

std::string deepStreamConfig(const OnnxExportOptions& options, size_t num_labels,
                             int64_t mask_resolution);

}  // namespace mrcnn::exporter

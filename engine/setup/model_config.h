// The spec's model fields (maskrcnn_config, data_config.num_classes) as the model's options,
// its resize and padding (data_config) as the image input's, and its tiling of large images.
#pragma once

#include "engine/export/onnx_export.h"
#include "engine/inference/image_input.h"
#include "engine/inference/tile_options.h"
#include "engine/model/mask_rcnn.h"
#include "engine/setup/categories.h"
#include "specs/spec.h"

namespace mrcnn::engine {

// Every maskrcnn_config field the model uses, mapped onto MaskRCNNOptions. The spec has been
// validated (loadSpecFile): list fields are read from `resolved`.
model::MaskRCNNOptions modelOptionsFromSpec(const spec::Experiment& spec,
                                            const spec::Resolved& resolved);

// data_config's resize_mode (fixed canvas image_size, or shorter_side min_size/max_size) and
// padding (size_divisibility, or 2^max_level on the canvas).
InputOptions inputOptionsFromSpec(const spec::Experiment& spec, const spec::Resolved& resolved);

// data_config's tile fields (tile_size 0: no tiling), validated with the spec; `given` false.
TileOptions tileOptionsFromSpec(const spec::Experiment& spec);

// The tiling a task runs: the command line's when --tile was given, else the spec's.
inline TileOptions chooseTiles(const TileOptions& command_line, const spec::Experiment& spec) {
  return command_line.given ? command_line : tileOptionsFromSpec(spec);
}

// The export of the spec's model: its input options, the categories' ids (one a label), the
// default opset and this build's version.
exporter::OnnxExportOptions onnxExportOptions(const spec::Experiment& spec,
                                              const spec::Resolved& resolved,
                                              const std::vector<Category>& categories);

}  // namespace mrcnn::engine

// The spec's model fields (maskrcnn_config, data_config.num_classes) as the model's options.
#pragma once

#include "engine/model/mask_rcnn.h"
#include "specs/spec.h"

namespace mrcnn::engine {

// Every maskrcnn_config field the model uses, mapped onto MaskRCNNOptions. The spec has been
// validated (loadSpecFile): list fields are read from `resolved`.
model::MaskRCNNOptions modelOptionsFromSpec(const spec::Experiment& spec,
                                            const spec::Resolved& resolved);

}  // namespace mrcnn::engine

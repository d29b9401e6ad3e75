// The dataset check's anchor settings from a spec: its anchor style (TAO's levels, scales and
// aspect ratios, or torchvision's), its resize (fixed canvas or shorter side) and the RPN's
// positive IoU. Header-only: the engine's dataset_stats task and the GUI's dataset view (which
// links no engine) both use it, and each links the spec and dataset libraries already.
#pragma once

#include <cmath>

#include "dataset/stats/dataset_stats.h"
#include "specs/spec.h"

namespace mrcnn::dataset {

inline AnchorCoverageOptions anchorCoverageFromSpec(const spec::LoadedSpec& loaded) {
  const auto& m = loaded.spec.maskrcnn_config();
  const auto& d = loaded.spec.data_config();
  AnchorCoverageOptions o;
  if (m.anchor_style() == "torchvision") {
    // torchvision's sizes 32..512 on levels 2..6 and ratios (h / w) 0.5, 1, 2.
    o.min_level = 2;
    o.max_level = 6;
    o.num_scales = 1;
    o.anchor_scale = 8;
    o.aspect_pairs = {
        {1.0, 1.0}, {std::sqrt(2.0), 1 / std::sqrt(2.0)}, {1 / std::sqrt(2.0), std::sqrt(2.0)}};
  } else {
    o.min_level = static_cast<int>(m.min_level());
    o.max_level = static_cast<int>(m.max_level());
    o.num_scales = static_cast<int>(m.num_scales());
    o.anchor_scale = m.anchor_scale();
    o.aspect_pairs = loaded.resolved.aspect_ratios;
  }
  o.shorter_side = d.resize_mode() == "shorter_side";
  o.canvas_height = loaded.resolved.image_height;
  o.canvas_width = loaded.resolved.image_width;
  o.min_size = static_cast<int>(d.min_size());
  o.max_size = static_cast<int>(d.max_size());
  o.positive_iou = m.rpn_positive_overlap();
  return o;
}

}  // namespace mrcnn::dataset

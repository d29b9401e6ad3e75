// The six loss values the engine reports (events::Losses' fields), as plain numbers: a
// training step's, or the validation images' (engine/validation).
#pragma once

namespace mrcnn::train {

struct LossValues {
  double total = 0;  // with the spec's loss weights applied
  double rpn_objectness = 0, rpn_box = 0, fast_rcnn_class = 0, fast_rcnn_box = 0, mask = 0;
};

}  // namespace mrcnn::train

// Fine-tuning to other classes: a Mask R-CNN state_dict whose predictor has another number of
// classes than the model. Its class-dependent tensors (the box predictor's cls_score and
// bbox_pred, the mask predictor's mask_fcn_logits: one row, or four for box deltas, per class)
// are set aside, the rest loads, and the model's class-dependent tensors keep their initial
// values — except the rows of classes whose names are COCO's when the file's predictor is
// torchvision's COCO layout (91 labels, weights/coco_categories.h): those rows, and the
// background's, are copied from COCO's, so that a person/car data set starts from COCO's
// person and car.
#pragma once

#include <string>
#include <vector>

#include "engine/model/mask_rcnn.h"
#include "engine/setup/weights.h"

namespace mrcnn::engine {

// The file's class-dependent tensors, set aside because their class count differs.
struct ClassChange {
  int64_t file_classes = 0;  // 0: nothing set aside (same classes, or not a class change)
  model::StateDict tensors;  // model key -> the file's tensor
};

// Moves the class-dependent tensors out of `state` (model keys, no "model." prefix) when the
// file's cls_score has another class count than the model's and every class-dependent tensor
// differs from the model's in its class dimension alone. Otherwise nothing moves, and the
// loader reports any mismatch as the error it is.
ClassChange takeClassDependent(model::StateDict& state, const model::MaskRCNNImpl& model);

// After the rest has loaded: copies the rows of the classes named in `class_names` (by label,
// index 0 the background) that COCO has, when the file's predictor is COCO's layout, and
// records in `report` what was initialised, the rows copied and the one warning.
void applyClassChange(model::MaskRCNNImpl& model, const ClassChange& change,
                      const std::vector<std::string>& class_names, const std::string& source,
                      WeightsReport& report);

}  // namespace mrcnn::engine

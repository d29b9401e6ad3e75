// Starting weights for a model: a checkpoint of ours (model.step-N.pt, the model's tensors
// under "model.") or a torchvision Mask R-CNN state_dict (torch.save(model.state_dict())),
// recognised by their keys. `skip` is the spec's skip_checkpoint_variables: a regular
// expression (ECMAScript, searched in the key) of parameters not to load, which then keep
// their initial values — e.g. "roi_heads.box_predictor|mask_fcn_logits" to fine-tune
// torchvision's COCO weights on other classes.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "engine/model/mask_rcnn.h"

namespace mrcnn::engine {

struct WeightsReport {
  std::string kind;  // "checkpoint" or "torchvision state_dict"
  int loaded = 0;
  std::vector<std::string> skipped;  // keys left out by the regular expression
};

// Throws model::StateDictError naming the file: not a state_dict, keys that do not fit
// (missing, unexpected, not skipped), shapes that differ (the key and both shapes).
WeightsReport loadWeights(model::MaskRCNNImpl& model, const std::filesystem::path& file,
                          const std::string& skip = "");

// The model's tensors of a state_dict read from a file (the "model." prefix of our
// checkpoints removed); `kind` as in WeightsReport.
model::StateDict modelTensors(const model::StateDict& state, std::string* kind = nullptr);

}  // namespace mrcnn::engine

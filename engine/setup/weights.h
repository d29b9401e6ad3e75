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
  size_t pruned_widths = 0;  // loadModel: convolutions narrower than the spec's (a pruned model)
};

// Throws model::StateDictError naming the file: not a state_dict, keys that do not fit
// (missing, unexpected, not skipped), shapes that differ (the key and both shapes).
WeightsReport loadWeights(model::MaskRCNNImpl& model, const std::filesystem::path& file,
                          const std::string& skip = "");
// The same for weights already read from `source` (a file's name, for the messages).
WeightsReport loadWeights(model::MaskRCNNImpl& model, const model::StateDict& state,
                          const std::string& source, const std::string& skip = "");

// The convolution widths of a model's tensors (no "model." prefix) that differ from those of
// the standard model `options` describe: a pruned model's (empty for any other).
model::ConvWidths prunedWidths(const model::MaskRCNNOptions& options,
                               const model::StateDict& tensors);

// The model the weights in `file` fit, loaded with them: `options` (the spec's) with the
// convolution widths of the file's tensors (model/conv_widths.h), so that a pruned model, a
// run retrained from one and its checkpoints rebuild as they are. Skipped keys keep the
// spec's widths. Errors as loadWeights.
model::MaskRCNN loadModel(model::MaskRCNNOptions options, const std::filesystem::path& file,
                          const std::string& skip = "", WeightsReport* report = nullptr);
// The same for weights already read (`source` names them in messages).
model::MaskRCNN loadModel(model::MaskRCNNOptions options, const model::StateDict& state,
                          const std::string& source, const std::string& skip = "",
                          WeightsReport* report = nullptr);

// The model's tensors of a state_dict read from a file (the "model." prefix of our
// checkpoints removed); `kind` as in WeightsReport.
model::StateDict modelTensors(const model::StateDict& state, std::string* kind = nullptr);

}  // namespace mrcnn::engine

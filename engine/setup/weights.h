// Starting weights for a model, recognised by their keys:
//  - a checkpoint of ours (model.step-N.pt, the model's tensors under "model.");
//  - a torchvision Mask R-CNN state_dict (torch.save(model.state_dict()));
//  - a torchvision ResNet ImageNet classifier's state_dict (resnet18/34/50/101: conv1, bn1,
//    layer1..4, fc): it loads into the backbone's ResNet body, fc is ignored, and the FPN, the
//    RPN and the RoI heads keep their initial values.
// `skip` is the spec's skip_checkpoint_variables: a regular expression (ECMAScript, searched in
// the model's key) of parameters not to load, which then keep their initial values.
//
// Fine-tuning to other classes (WeightsOptions::new_classes): where the file's predictor has
// another number of classes than the model, its class-dependent tensors (weights_classes.h) keep
// their initial values, with one warning naming them; when the file's predictor is torchvision's
// COCO layout and the data set's classes carry COCO names, those classes' rows are copied from
// COCO's. Every other shape mismatch is an error.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "engine/model/mask_rcnn.h"

namespace mrcnn::engine {

// A class of the model whose rows were copied from the file's predictor.
struct ClassRowSource {
  int64_t label = 0;       // the model's label
  std::string name;        // the data set's name of it
  int64_t file_label = 0;  // the row in the file's predictor (torchvision's COCO label)
  std::string file_name;   // COCO's name of that row
};

// Something the user should know about the weights (a "warning" event with this code).
struct WeightsWarning {
  std::string code;
  std::string message;
};

struct WeightsReport {
  // "checkpoint", "torchvision state_dict" or "torchvision ImageNet ResNet-<depth>"
  std::string kind;
  int loaded = 0;
  std::vector<std::string> skipped;  // keys left out by the regular expression
  size_t pruned_widths = 0;  // loadModel: convolutions narrower than the spec's (a pruned model)
  // An ImageNet classifier: only the backbone body was loaded; `ignored` counts fc's tensors.
  bool backbone_only = false;
  int ignored = 0;
  // The class-dependent tensors left at their initial values (the file's predictor has
  // file_classes classes), and the rows copied into them by class name.
  std::vector<std::string> initialised;
  int64_t file_classes = 0;
  std::vector<ClassRowSource> class_rows;
  std::vector<WeightsWarning> warnings;

  // One line for the log: where the weights went and what did not come from the file.
  std::string summary(const std::string& source) const;
};

struct WeightsOptions {
  std::string skip;  // skip_checkpoint_variables
  // The data set's class names by label (index 0 the background; categoryTable's names). Used
  // to copy COCO's rows when the class count changes; empty: no rows are copied.
  std::vector<std::string> class_names;
  // Fine-tuning (training's start): a predictor of another class count is a warning and its
  // class-dependent tensors keep their initial values. False (evaluation, inference, export:
  // a model whose heads would be untrained): it is the shape mismatch error it always was.
  bool new_classes = true;
};

// Throws model::StateDictError naming the file: not a state_dict, keys that do not fit
// (missing, unexpected, not skipped), shapes that differ (the key and both shapes), an
// ImageNet ResNet of another depth than the model's.
WeightsReport loadWeights(model::MaskRCNNImpl& model, const std::filesystem::path& file,
                          const WeightsOptions& options);
// The same for weights already read from `source` (a file's name, for the messages).
WeightsReport loadWeights(model::MaskRCNNImpl& model, const model::StateDict& state,
                          const std::string& source, const WeightsOptions& options);
// The forms before WeightsOptions: skip only, new_classes false.
WeightsReport loadWeights(model::MaskRCNNImpl& model, const std::filesystem::path& file,
                          const std::string& skip = "");
WeightsReport loadWeights(model::MaskRCNNImpl& model, const model::StateDict& state,
                          const std::string& source, const std::string& skip = "");

// The convolution widths of a model's tensors (no "model." prefix) that differ from those of
// the standard model `options` describe: a pruned model's (empty for any other).
model::ConvWidths prunedWidths(const model::MaskRCNNOptions& options,
                               const model::StateDict& tensors);

// The model the weights in `file` fit, loaded with them: `options` (the spec's) with the
// convolution widths of the file's tensors (model/conv_widths.h), so that a pruned model, a
// run retrained from one and its checkpoints rebuild as they are. Skipped keys keep the
// spec's widths; an ImageNet classifier has the standard widths. Errors as loadWeights.
model::MaskRCNN loadModel(model::MaskRCNNOptions options, const std::filesystem::path& file,
                          const WeightsOptions& weights, WeightsReport* report = nullptr);
model::MaskRCNN loadModel(model::MaskRCNNOptions options, const model::StateDict& state,
                          const std::string& source, const WeightsOptions& weights,
                          WeightsReport* report = nullptr);
// The forms before WeightsOptions: skip only, new_classes false.
model::MaskRCNN loadModel(model::MaskRCNNOptions options, const std::filesystem::path& file,
                          const std::string& skip = "", WeightsReport* report = nullptr);
model::MaskRCNN loadModel(model::MaskRCNNOptions options, const model::StateDict& state,
                          const std::string& source, const std::string& skip = "",
                          WeightsReport* report = nullptr);

// The model's tensors of a state_dict read from a file (the "model." prefix of our
// checkpoints removed); `kind` as in WeightsReport.
model::StateDict modelTensors(const model::StateDict& state, std::string* kind = nullptr);

// The depth of a torchvision ResNet ImageNet classifier's state_dict (conv1, bn1, layer1..4,
// fc at the top level: 18, 34, 50, 101, 152 or TAO's 10), 0 when `state` is not one.
int imageNetResNetDepth(const model::StateDict& state);

}  // namespace mrcnn::engine

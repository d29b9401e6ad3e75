#include "engine/setup/weights_classes.h"

#include <torch/torch.h>

#include <array>
#include <map>

#include "weights/coco_categories.h"

namespace mrcnn::engine {
namespace {

// The class-dependent tensors, with the rows each class has in them (box deltas: dx, dy, dw,
// dh per class, class major). torchvision's names, as our model's.
struct ClassTensor {
  const char* key;
  int64_t rows_per_class;
};
constexpr std::array<ClassTensor, 6> kClassTensors = {{
    {"roi_heads.box_predictor.cls_score.weight", 1},
    {"roi_heads.box_predictor.cls_score.bias", 1},
    {"roi_heads.box_predictor.bbox_pred.weight", 4},
    {"roi_heads.box_predictor.bbox_pred.bias", 4},
    {"roi_heads.mask_predictor.mask_fcn_logits.weight", 1},
    {"roi_heads.mask_predictor.mask_fcn_logits.bias", 1},
}};

std::map<std::string, at::Tensor> namedTensors(const torch::nn::Module& module) {
  std::map<std::string, at::Tensor> out;
  for (const auto& p : module.named_parameters(/*recurse=*/true))
    out[p.key()] = p.value();
  return out;
}

}  // namespace

ClassChange takeClassDependent(model::StateDict& state, const model::MaskRCNNImpl& model) {
  const std::map<std::string, at::Tensor> ours = namedTensors(model);
  const int64_t model_classes = model.options().roi_heads.num_classes;
  int64_t file_classes = 0;
  for (const auto& [key, tensor] : state) {
    if (key == kClassTensors[0].key && tensor.dim() == 2) file_classes = tensor.size(0);
  }
  if (file_classes == 0 || file_classes == model_classes) return {};

  // Every class-dependent tensor of the file must be the model's with another class count;
  // anything else (another head width, say) is not a change of classes.
  std::map<std::string, int64_t> rows;
  for (const ClassTensor& c : kClassTensors)
    rows[c.key] = c.rows_per_class;
  for (const auto& [key, tensor] : state) {
    const auto r = rows.find(key);
    if (r == rows.end()) continue;
    const auto mine = ours.find(key);
    if (mine == ours.end() || tensor.dim() != mine->second.dim() || tensor.dim() == 0) return {};
    if (tensor.size(0) != r->second * file_classes) return {};
    if (tensor.sizes().slice(1) != mine->second.sizes().slice(1)) return {};
  }

  ClassChange change;
  change.file_classes = file_classes;
  model::StateDict kept;
  for (auto& [key, tensor] : state) {
    if (rows.count(key)) {
      change.tensors.emplace_back(key, tensor);
    } else {
      kept.emplace_back(key, tensor);
    }
  }
  state = std::move(kept);
  return change;
}

void applyClassChange(model::MaskRCNNImpl& model, const ClassChange& change,
                      const std::vector<std::string>& class_names, const std::string& source,
                      WeightsReport& report) {
  if (change.file_classes == 0) return;
  report.file_classes = change.file_classes;
  for (const auto& [key, tensor] : change.tensors)
    report.initialised.push_back(key);

  // torchvision's COCO layout: the file's row k is COCO label k, named by coco_categories.
  const auto& coco = weights::cocoCategoryNames();
  const bool coco_layout = change.file_classes == static_cast<int64_t>(coco.size());
  const int64_t model_classes = model.options().roi_heads.num_classes;
  if (coco_layout) {
    for (size_t label = 1;
         label < class_names.size() && static_cast<int64_t>(label) < model_classes; ++label) {
      const auto row = weights::cocoLabelOf(class_names[label]);
      if (!row) continue;
      report.class_rows.push_back(
          {static_cast<int64_t>(label), class_names[label], *row, coco[static_cast<size_t>(*row)]});
    }
  }
  if (!report.class_rows.empty()) {
    std::map<std::string, int64_t> rows_per_class;
    for (const ClassTensor& c : kClassTensors)
      rows_per_class[c.key] = c.rows_per_class;
    const std::map<std::string, at::Tensor> ours = namedTensors(model);
    torch::NoGradGuard no_grad;
    for (const auto& [key, theirs] : change.tensors) {
      const auto mine = ours.find(key);
      if (mine == ours.end()) continue;
      const int64_t k = rows_per_class.at(key);
      const auto copyRows = [&](int64_t to, int64_t from) {
        mine->second.narrow(0, to * k, k).copy_(theirs.narrow(0, from * k, k));
      };
      copyRows(0, 0);  // the background: its score is what the classes' are weighed against
      for (const ClassRowSource& r : report.class_rows)
        copyRows(r.label, r.file_label);
    }
  }

  std::string keys;
  for (const std::string& key : report.initialised)
    keys += (keys.empty() ? "" : ", ") + key;
  std::string message = source + ": its predictor has " + std::to_string(change.file_classes) +
                        " classes and the model " + std::to_string(model_classes) + ": " + keys +
                        " are not loaded and keep their initial values";
  if (!report.class_rows.empty()) {
    message += ", except the rows of the background and of " +
               std::to_string(report.class_rows.size()) + " classes with COCO names (";
    for (size_t i = 0; i < report.class_rows.size(); ++i) {
      const ClassRowSource& r = report.class_rows[i];
      message += (i ? ", " : "") + r.name + " <- COCO " + r.file_name + " (" +
                 std::to_string(r.file_label) + ")";
    }
    message += ")";
  }
  report.warnings.push_back({"weights_classes_initialised", message});
}

}  // namespace mrcnn::engine

#include "engine/setup/weights.h"

#include <optional>
#include <regex>
#include <sstream>

namespace mrcnn::engine {
namespace {

bool startsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// "name (expected shape [..])" -> "name"
std::string keyOf(const std::string& entry) {
  const auto space = entry.find(' ');
  return space == std::string::npos ? entry : entry.substr(0, space);
}

}  // namespace

model::StateDict modelTensors(const model::StateDict& state, std::string* kind) {
  bool ours = false;
  for (const auto& [key, tensor] : state) {
    if (startsWith(key, "model.")) {
      ours = true;
      break;
    }
  }
  if (kind) *kind = ours ? "checkpoint" : "torchvision state_dict";
  if (!ours) return state;
  model::StateDict out;
  for (const auto& [key, tensor] : state) {
    if (startsWith(key, "model.")) out.emplace_back(key.substr(6), tensor);
  }
  return out;
}

namespace {

// The spec's skip_checkpoint_variables as a regular expression (none when empty).
std::optional<std::regex> skipPattern(const std::string& skip) {
  std::optional<std::regex> pattern;
  if (!skip.empty()) {
    try {
      pattern.emplace(skip, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw model::StateDictError("skip_checkpoint_variables \"" + skip +
                                  "\": not a valid regular expression: " + e.what());
    }
  }
  return pattern;
}

}  // namespace

WeightsReport loadWeights(model::MaskRCNNImpl& model, const std::filesystem::path& file,
                          const std::string& skip) {
  return loadWeights(model, model::readStateDict(file), file.string(), skip);
}

WeightsReport loadWeights(model::MaskRCNNImpl& model, const model::StateDict& file_state,
                          const std::string& source, const std::string& skip) {
  WeightsReport report;
  const model::StateDict state = modelTensors(file_state, &report.kind);
  const std::optional<std::regex> pattern = skipPattern(skip);
  const auto skipped = [&](const std::string& key) {
    return pattern && std::regex_search(key, *pattern);
  };

  model::StateDict kept;
  for (const auto& [key, tensor] : state) {
    if (skipped(key)) {
      report.skipped.push_back(key);
    } else {
      kept.emplace_back(key, tensor);
    }
  }
  model::LoadOptions options;
  options.source = source;
  options.strict = !pattern.has_value();
  const model::LoadReport loaded = model.loadTorchvisionState(kept, options);
  report.loaded = loaded.loaded;

  if (pattern) {  // missing keys are fine only when skipped
    std::vector<std::string> missing, unexpected = loaded.unexpected;
    for (const auto& m : loaded.missing) {
      if (!skipped(keyOf(m))) missing.push_back(m);
    }
    if (!missing.empty() || !unexpected.empty()) {
      std::ostringstream os;
      os << source << ": does not fit the model (skip_checkpoint_variables \"" << skip
         << "\" leaves them):";
      for (const auto& m : missing)
        os << "\n  missing key " << m;
      for (const auto& u : unexpected)
        os << "\n  unexpected key " << u;
      throw model::StateDictError(os.str());
    }
  }
  return report;
}

model::ConvWidths prunedWidths(const model::MaskRCNNOptions& options,
                               const model::StateDict& tensors) {
  return model::nonStandardWidths(model::convWidthsOf(tensors), options.backbone.resnet.depth,
                                  options.backbone.out_channels,
                                  options.roi_heads.mask_head_layers);
}

model::MaskRCNN loadModel(model::MaskRCNNOptions options, const std::filesystem::path& file,
                          const std::string& skip, WeightsReport* report) {
  return loadModel(std::move(options), model::readStateDict(file), file.string(), skip, report);
}

model::MaskRCNN loadModel(model::MaskRCNNOptions options, const model::StateDict& state,
                          const std::string& source, const std::string& skip,
                          WeightsReport* report) {
  const std::optional<std::regex> pattern = skipPattern(skip);
  options.conv_widths.clear();
  for (const auto& [name, width] : prunedWidths(options, modelTensors(state))) {
    if (!pattern || !std::regex_search(name + ".weight", *pattern))
      options.conv_widths[name] = width;
  }
  std::optional<model::MaskRCNN> net;
  try {
    net.emplace(options);
  } catch (const std::exception& e) {
    // Widths that do not fit together: the weights are not a model this spec describes.
    throw model::StateDictError(source +
                                ": its convolution widths do not make a model: " + e.what());
  }
  WeightsReport r = loadWeights(**net, state, source, skip);
  r.pruned_widths = options.conv_widths.size();
  if (report) *report = r;
  return *net;
}

}  // namespace mrcnn::engine

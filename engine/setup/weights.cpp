#include "engine/setup/weights.h"

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "engine/setup/weights_classes.h"

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

// Missing keys are fine only when `allowed` says so (skipped, or set aside); unexpected keys
// never are. Throws the loader's kind of message naming `why`.
void requireFit(const model::LoadReport& loaded, const std::string& source, const std::string& why,
                const std::function<bool(const std::string&)>& allowed) {
  std::vector<std::string> missing;
  for (const auto& m : loaded.missing) {
    if (!allowed(keyOf(m))) missing.push_back(m);
  }
  if (missing.empty() && loaded.unexpected.empty()) return;
  std::ostringstream os;
  os << source << ": does not fit the model (" << why << "):";
  for (const auto& m : missing)
    os << "\n  missing key " << m;
  for (const auto& u : loaded.unexpected)
    os << "\n  unexpected key " << u;
  throw model::StateDictError(os.str());
}

const std::string kBodyPrefix = "backbone.body.";

// An ImageNet classifier's tensors into the backbone body: fc is not part of it.
WeightsReport loadImageNet(model::MaskRCNNImpl& net, const model::StateDict& state, int depth,
                           const std::string& source, const std::optional<std::regex>& pattern) {
  const int ours = net.options().backbone.resnet.depth;
  if (depth != ours) {
    // What to do: the depth the file has where the model builds it, and the published
    // classifier of the spec's depth where there is one.
    const bool buildable = depth == 10 || depth == 18 || depth == 34 || depth == 50 || depth == 101;
    const bool published = ours == 18 || ours == 34 || ours == 50 || ours == 101;
    std::string advice = buildable ? "set nlayers: " + std::to_string(depth) : std::string();
    if (published) {
      advice += (advice.empty() ? "" : ", or ") + std::string("start from torchvision:resnet") +
                std::to_string(ours);
    }
    throw model::StateDictError(source + ": an ImageNet ResNet-" + std::to_string(depth) +
                                " classifier, but the spec's model is a ResNet-" +
                                std::to_string(ours) + " (maskrcnn_config.nlayers)" +
                                (advice.empty() ? std::string() : ": " + advice));
  }
  WeightsReport report;
  report.kind = "torchvision ImageNet ResNet-" + std::to_string(depth);
  report.backbone_only = true;
  const auto skipped = [&](const std::string& body_key) {
    return pattern && std::regex_search(kBodyPrefix + body_key, *pattern);
  };
  model::StateDict body;
  for (const auto& [key, tensor] : state) {
    if (startsWith(key, "fc.")) {
      ++report.ignored;
    } else if (skipped(key)) {
      report.skipped.push_back(kBodyPrefix + key);
    } else {
      body.emplace_back(key, tensor);
    }
  }
  model::ResNet& resnet = net.backbone()->body();
  resnet->unfoldBatchNorm();  // as loadTorchvisionState: the loaded values are the unfolded ones
  model::LoadOptions options;
  options.source = source;
  options.strict = !pattern.has_value();
  try {
    const model::LoadReport loaded = model::loadStateDict(*resnet, body, options);
    report.loaded = loaded.loaded;
    if (pattern) {
      requireFit(loaded, source, "skip_checkpoint_variables leaves them",
                 [&](const std::string& key) { return skipped(key); });
    }
  } catch (const model::StateDictError& e) {
    // The body's keys are relative to it: say where they go.
    throw model::StateDictError(std::string(e.what()) +
                                "\n  (an ImageNet classifier's keys, loaded into " + kBodyPrefix +
                                ")");
  }
  return report;
}

// Blocks per stage (layer1..4) and whether the blocks are bottlenecks -> the ResNet depth.
int depthOf(const std::array<int, 4>& blocks, bool bottleneck) {
  const std::map<std::array<int, 4>, int> basic = {
      {{1, 1, 1, 1}, 10}, {{2, 2, 2, 2}, 18}, {{3, 4, 6, 3}, 34}};
  const std::map<std::array<int, 4>, int> deep = {
      {{3, 4, 6, 3}, 50}, {{3, 4, 23, 3}, 101}, {{3, 8, 36, 3}, 152}};
  const auto& table = bottleneck ? deep : basic;
  const auto it = table.find(blocks);
  return it == table.end() ? 0 : it->second;
}

}  // namespace

int imageNetResNetDepth(const model::StateDict& state) {
  bool conv1 = false, bottleneck = false;
  std::array<std::set<int>, 4> blocks;
  for (const auto& [key, tensor] : state) {
    if (key == "conv1.weight") conv1 = true;
    // Anything but a classifier's top-level keys (backbone., model., a wrapped "module.")
    // makes it some other file.
    if (!startsWith(key, "conv1.") && !startsWith(key, "bn1.") && !startsWith(key, "layer") &&
        !startsWith(key, "fc."))
      return 0;
    if (key.size() > 7 && startsWith(key, "layer") && key[6] == '.' && key[5] >= '1' &&
        key[5] <= '4') {
      const size_t dot = key.find('.', 7);
      if (dot == std::string::npos) return 0;
      try {
        blocks[static_cast<size_t>(key[5] - '1')].insert(std::stoi(key.substr(7, dot - 7)));
      } catch (const std::exception&) {
        return 0;
      }
      if (key.compare(dot, 7, ".conv3.") == 0) bottleneck = true;
    }
  }
  if (!conv1) return 0;
  std::array<int, 4> counts{};
  for (size_t s = 0; s < 4; ++s)
    counts[s] = static_cast<int>(blocks[s].size());
  return depthOf(counts, bottleneck);
}

model::StateDict modelTensors(const model::StateDict& state, std::string* kind) {
  bool ours = false;
  for (const auto& [key, tensor] : state) {
    if (startsWith(key, "model.")) {
      ours = true;
      break;
    }
  }
  if (kind) {
    const int depth = ours ? 0 : imageNetResNetDepth(state);
    *kind = ours    ? "checkpoint"
            : depth ? "torchvision ImageNet ResNet-" + std::to_string(depth)
                    : "torchvision state_dict";
  }
  if (!ours) return state;
  model::StateDict out;
  for (const auto& [key, tensor] : state) {
    if (startsWith(key, "model.")) out.emplace_back(key.substr(6), tensor);
  }
  return out;
}

WeightsReport loadWeights(model::MaskRCNNImpl& model, const std::filesystem::path& file,
                          const WeightsOptions& options) {
  return loadWeights(model, model::readStateDict(file), file.string(), options);
}

WeightsReport loadWeights(model::MaskRCNNImpl& model, const model::StateDict& file_state,
                          const std::string& source, const WeightsOptions& weights) {
  const std::optional<std::regex> pattern = skipPattern(weights.skip);
  if (const int depth = imageNetResNetDepth(file_state); depth != 0)
    return loadImageNet(model, file_state, depth, source, pattern);

  WeightsReport report;
  const model::StateDict state = modelTensors(file_state, &report.kind);
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
  const ClassChange change = weights.new_classes ? takeClassDependent(kept, model) : ClassChange{};
  std::set<std::string> set_aside;
  for (const auto& [key, tensor] : change.tensors)
    set_aside.insert(key);

  model::LoadOptions options;
  options.source = source;
  options.strict = !pattern.has_value() && set_aside.empty();
  const model::LoadReport loaded = model.loadTorchvisionState(kept, options);
  report.loaded = loaded.loaded;
  if (!options.strict) {
    const std::string why = pattern
                                ? "skip_checkpoint_variables \"" + weights.skip + "\" leaves them"
                                : "beyond its class-dependent tensors";
    requireFit(loaded, source, why,
               [&](const std::string& key) { return skipped(key) || set_aside.count(key) > 0; });
  }
  applyClassChange(model, change, weights.class_names, source, report);
  return report;
}

WeightsReport loadWeights(model::MaskRCNNImpl& model, const std::filesystem::path& file,
                          const std::string& skip) {
  return loadWeights(model, file, WeightsOptions{skip, {}, /*new_classes=*/false});
}

WeightsReport loadWeights(model::MaskRCNNImpl& model, const model::StateDict& state,
                          const std::string& source, const std::string& skip) {
  return loadWeights(model, state, source, WeightsOptions{skip, {}, /*new_classes=*/false});
}

std::string WeightsReport::summary(const std::string& source) const {
  std::ostringstream os;
  os << source << " (" << kind << "): ";
  if (backbone_only) {
    os << loaded << " tensors into the backbone's ResNet body, fc ignored (" << ignored
       << " tensors); the FPN, the RPN and the RoI heads keep their initial values";
  } else {
    os << loaded << " tensors";
  }
  if (!skipped.empty()) os << ", " << skipped.size() << " skipped";
  if (pruned_widths) os << ", " << pruned_widths << " pruned layers";
  if (!initialised.empty()) {
    os << ", " << initialised.size() << " class-dependent tensors initialised (the file has "
       << file_classes << " classes)";
    if (!class_rows.empty()) {
      os << ", rows from COCO's:";
      for (size_t i = 0; i < class_rows.size(); ++i) {
        const ClassRowSource& r = class_rows[i];
        os << (i ? "; " : " ") << r.label << " " << r.name << " <- " << r.file_label << " "
           << r.file_name;
      }
    }
  }
  return os.str();
}

model::ConvWidths prunedWidths(const model::MaskRCNNOptions& options,
                               const model::StateDict& tensors) {
  return model::nonStandardWidths(model::convWidthsOf(tensors), options.backbone.resnet.depth,
                                  options.backbone.out_channels,
                                  options.roi_heads.mask_head_layers);
}

model::MaskRCNN loadModel(model::MaskRCNNOptions options, const std::filesystem::path& file,
                          const WeightsOptions& weights, WeightsReport* report) {
  return loadModel(std::move(options), model::readStateDict(file), file.string(), weights, report);
}

model::MaskRCNN loadModel(model::MaskRCNNOptions options, const model::StateDict& state,
                          const std::string& source, const WeightsOptions& weights,
                          WeightsReport* report) {
  const std::optional<std::regex> pattern = skipPattern(weights.skip);
  options.conv_widths.clear();
  // An ImageNet classifier's keys are not the model's: it has the standard widths.
  if (imageNetResNetDepth(state) == 0) {
    for (const auto& [name, width] : prunedWidths(options, modelTensors(state))) {
      if (!pattern || !std::regex_search(name + ".weight", *pattern))
        options.conv_widths[name] = width;
    }
  }
  std::optional<model::MaskRCNN> net;
  try {
    net.emplace(options);
  } catch (const std::exception& e) {
    // Widths that do not fit together: the weights are not a model this spec describes.
    throw model::StateDictError(source +
                                ": its convolution widths do not make a model: " + e.what());
  }
  WeightsReport r = loadWeights(**net, state, source, weights);
  r.pruned_widths = options.conv_widths.size();
  if (report) *report = r;
  return *net;
}

model::MaskRCNN loadModel(model::MaskRCNNOptions options, const std::filesystem::path& file,
                          const std::string& skip, WeightsReport* report) {
  return loadModel(std::move(options), file, WeightsOptions{skip, {}, /*new_classes=*/false},
                   report);
}

model::MaskRCNN loadModel(model::MaskRCNNOptions options, const model::StateDict& state,
                          const std::string& source, const std::string& skip,
                          WeightsReport* report) {
  return loadModel(std::move(options), state, source,
                   WeightsOptions{skip, {}, /*new_classes=*/false}, report);
}

}  // namespace mrcnn::engine

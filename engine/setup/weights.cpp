#include "engine/setup/weights.h"

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

WeightsReport loadWeights(model::MaskRCNNImpl& model, const std::filesystem::path& file,
                          const std::string& skip) {
  WeightsReport report;
  const model::StateDict state = modelTensors(model::readStateDict(file), &report.kind);

  std::optional<std::regex> pattern;
  if (!skip.empty()) {
    try {
      pattern.emplace(skip, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw model::StateDictError("skip_checkpoint_variables \"" + skip +
                                  "\": not a valid regular expression: " + e.what());
    }
  }
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
  options.source = file.string();
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
      os << file.string() << ": does not fit the model (skip_checkpoint_variables \"" << skip
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

}  // namespace mrcnn::engine

#include "engine/model/conv_widths.h"

#include <cctype>
#include <sstream>
#include <string_view>

namespace mrcnn::model {
namespace {

// Consumes `prefix` from the front of `s`.
bool take(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// Consumes a decimal number (at least one digit; `value` gets it, up to 9 digits).
bool takeNumber(std::string_view& s, int64_t* value = nullptr) {
  size_t n = 0;
  int64_t v = 0;
  while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) {
    if (n < 9) v = v * 10 + (s[n] - '0');
    ++n;
  }
  s.remove_prefix(n);
  if (value) *value = v;
  return n > 0;
}

}  // namespace

bool isPrunableConv(const std::string& name) {
  std::string_view s = name;
  if (take(s, "backbone.body.")) {
    if (s == "conv1") return true;
    if (!take(s, "layer") || !takeNumber(s) || !take(s, ".") || !takeNumber(s) || !take(s, "."))
      return false;
    if (s == "downsample.0") return true;
    return take(s, "conv") && takeNumber(s) && s.empty();
  }
  if (take(s, "rpn.head.conv.") || take(s, "roi_heads.mask_head."))
    return takeNumber(s) && s == ".0";
  return false;
}

ConvWidths convWidthsOf(const StateDict& state) {
  ConvWidths widths;
  constexpr std::string_view suffix = ".weight";
  for (const auto& [key, tensor] : state) {
    if (key.size() <= suffix.size() ||
        key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0 || tensor.dim() != 4)
      continue;
    const std::string name = key.substr(0, key.size() - suffix.size());
    if (isPrunableConv(name)) widths[name] = tensor.size(0);
  }
  return widths;
}

int64_t standardConvWidth(const std::string& name, int depth, int64_t rpn_channels,
                          const std::vector<int64_t>& mask_head_layers) {
  if (!isPrunableConv(name)) return 0;
  std::string_view s = name;
  int64_t stage = 0, index = 0;
  if (take(s, "backbone.body.")) {
    if (s == "conv1") return 64;
    take(s, "layer");
    takeNumber(s, &stage);
    take(s, ".");
    takeNumber(s);
    take(s, ".");
    if (stage < 1 || stage > 4) return 0;
    const int64_t planes = int64_t{64} << (stage - 1);
    const bool bottleneck = depth >= 50;
    if (s == "downsample.0") return bottleneck ? 4 * planes : planes;
    return bottleneck && s == "conv3" ? 4 * planes : planes;
  }
  if (take(s, "rpn.head.conv.")) return rpn_channels;
  take(s, "roi_heads.mask_head.");
  takeNumber(s, &index);
  return index < static_cast<int64_t>(mask_head_layers.size())
             ? mask_head_layers[static_cast<size_t>(index)]
             : 0;
}

ConvWidths nonStandardWidths(const ConvWidths& widths, int depth, int64_t rpn_channels,
                             const std::vector<int64_t>& mask_head_layers) {
  ConvWidths out;
  for (const auto& [name, width] : widths) {
    if (width != standardConvWidth(name, depth, rpn_channels, mask_head_layers)) out[name] = width;
  }
  return out;
}

std::string convWidthsJson(const ConvWidths& widths) {
  std::ostringstream os;
  os << '{';
  bool first = true;
  for (const auto& [name, width] : widths) {
    os << (first ? "" : ",") << '"' << name << "\":" << width;
    first = false;
  }
  os << '}';
  return os.str();
}

}  // namespace mrcnn::model

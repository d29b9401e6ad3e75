#include "weights/coco_categories.h"

#include <cctype>
#include <map>
#include <stdexcept>

#include "weights/embedded_resources.h"

namespace mrcnn::weights {
namespace {

constexpr int kCocoLabels = 91;

std::string normalised(std::string_view s) {
  size_t begin = 0, end = s.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(s[begin])))
    ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(s[end - 1])))
    --end;
  std::string out(s.substr(begin, end - begin));
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

struct Table {
  std::vector<std::string> names;    // by label
  std::map<std::string, int> label;  // normalised name or other name -> label
};

// One line a label ("name" or "name|other|other"), '#' lines are comments.
Table readTable() {
  Table t;
  const std::string_view text = embedded::kCocoCategories;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line.front() == '#') continue;
    const int label = static_cast<int>(t.names.size());
    size_t field_start = 0;
    for (bool first = true;; first = false) {
      const size_t bar = line.find('|', field_start);
      const std::string_view field = line.substr(
          field_start, bar == std::string_view::npos ? std::string_view::npos : bar - field_start);
      if (first) t.names.emplace_back(field);
      if (label > 0 && field != "N/A") t.label.emplace(normalised(field), label);
      if (bar == std::string_view::npos) break;
      field_start = bar + 1;
    }
  }
  // A build from a damaged resource must not map classes to the wrong rows.
  if (t.names.size() != kCocoLabels)
    throw std::logic_error(
        "resources/coco_categories.txt (built in): " + std::to_string(t.names.size()) +
        " labels, expected " + std::to_string(kCocoLabels));
  return t;
}

const Table& table() {
  static const Table t = readTable();
  return t;
}

}  // namespace

const std::vector<std::string>& cocoCategoryNames() {
  return table().names;
}

std::optional<int> cocoLabelOf(std::string_view class_name) {
  const auto& labels = table().label;
  const auto it = labels.find(normalised(class_name));
  if (it == labels.end()) return std::nullopt;
  return it->second;
}

}  // namespace mrcnn::weights

// The part of YAML that Ultralytics' data.yaml files use: top-level `key: value` pairs whose
// value is a scalar, a flow list `[a, b]`, a flow map `{0: a, 1: b}`, or an indented block
// of `- item` or `key: value` lines. Comments, quotes ('...' and "...") and blank lines are
// understood; anchors, multi-line scalars and deeper nesting are not (an ImportError names the
// line).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mrcnn::dataset::import {

struct YamlValue {
  std::string scalar;                                     // a plain value
  std::vector<std::string> list;                          // a list of scalars
  std::vector<std::pair<std::string, std::string>> map;   // a map of scalars, in file order
};

struct YamlLite {
  std::vector<std::pair<std::string, YamlValue>> entries;
  const YamlValue* find(std::string_view key) const {
    for (const auto& [k, v] : entries) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

// `file` names the text in errors.
YamlLite parseYamlLite(std::string_view text, const std::string& file);

}  // namespace mrcnn::dataset::import

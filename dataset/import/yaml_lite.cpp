#include "dataset/import/yaml_lite.h"

#include "dataset/import/import.h"

namespace mrcnn::dataset::import {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Cuts a comment: '#' at the start or after a space, outside quotes.
std::string_view stripComment(std::string_view s) {
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
      return s.substr(0, i);
    }
  }
  return s;
}

std::string unquote(std::string_view s, const std::string& file, size_t line) {
  s = trim(s);
  if (s.size() >= 2 && s.front() == '\'' && s.back() == '\'') {
    std::string out;
    for (size_t i = 1; i + 1 < s.size(); ++i) {
      out.push_back(s[i]);
      if (s[i] == '\'' && s[i + 1] == '\'') ++i;  // '' is a quote inside single quotes
    }
    return out;
  }
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
    std::string out;
    for (size_t i = 1; i + 1 < s.size(); ++i) {
      if (s[i] != '\\') {
        out.push_back(s[i]);
        continue;
      }
      const char e = s[++i];
      if (e == 'n') out.push_back('\n');
      else if (e == 't') out.push_back('\t');
      else if (e == '"' || e == '\\' || e == '/') out.push_back(e);
      else throw ImportError(file, "line " + std::to_string(line), "an escape this reader does not know: \\" + std::string(1, e));
    }
    return out;
  }
  return std::string(s);
}

// Splits "a, 'b, c', d" at the commas outside quotes.
std::vector<std::string_view> splitFlow(std::string_view s) {
  std::vector<std::string_view> parts;
  char quote = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == ',') {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  if (!trim(s.substr(start)).empty()) parts.push_back(s.substr(start));
  return parts;
}

// The ':' that ends a key: outside quotes and followed by a space or the end.
size_t keyColon(std::string_view s) {
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == ':' && (i + 1 == s.size() || s[i + 1] == ' ')) {
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

YamlLite parseYamlLite(std::string_view text, const std::string& file) {
  YamlLite yaml;
  YamlValue* block = nullptr;  // the top-level entry whose indented block is being read
  size_t line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line = stripComment(text.substr(start, end - start));
    start = end + 1;
    ++line_number;
    if (trim(line).empty() || trim(line) == "---") continue;
    const auto place = [&] { return "line " + std::to_string(line_number); };
    const bool indented = line.front() == ' ' || line.front() == '\t';
    std::string_view content = trim(line);
    if (!indented && content.front() != '-') {
      const size_t colon = keyColon(content);
      if (colon == std::string_view::npos) throw ImportError(file, place(), "expected `key: value`");
      YamlValue value;
      std::string_view rest = trim(content.substr(colon + 1));
      if (!rest.empty() && rest.front() == '[') {
        if (rest.back() != ']') throw ImportError(file, place(), "a flow list must end on its line");
        for (std::string_view item : splitFlow(rest.substr(1, rest.size() - 2))) {
          value.list.push_back(unquote(item, file, line_number));
        }
      } else if (!rest.empty() && rest.front() == '{') {
        if (rest.back() != '}') throw ImportError(file, place(), "a flow map must end on its line");
        for (std::string_view item : splitFlow(rest.substr(1, rest.size() - 2))) {
          const size_t c = keyColon(trim(item));
          if (c == std::string_view::npos) throw ImportError(file, place(), "expected `key: value` in the map");
          value.map.emplace_back(unquote(trim(item).substr(0, c), file, line_number),
                                 unquote(trim(item).substr(c + 1), file, line_number));
        }
      } else if (!rest.empty()) {
        value.scalar = unquote(rest, file, line_number);
      }
      yaml.entries.emplace_back(unquote(content.substr(0, colon), file, line_number), std::move(value));
      block = rest.empty() ? &yaml.entries.back().second : nullptr;
      continue;
    }
    // An indented line (or a `- item` right under its key): part of the open block.
    if (block == nullptr) throw ImportError(file, place(), "an indented line outside a block this reader knows");
    if (content.front() == '-') {
      block->list.push_back(unquote(content.substr(1), file, line_number));
    } else {
      const size_t colon = keyColon(content);
      if (colon == std::string_view::npos) throw ImportError(file, place(), "expected `key: value` or `- item`");
      block->map.emplace_back(unquote(content.substr(0, colon), file, line_number),
                              unquote(content.substr(colon + 1), file, line_number));
    }
  }
  return yaml;
}

}  // namespace mrcnn::dataset::import

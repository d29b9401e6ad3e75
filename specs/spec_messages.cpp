// The wording of the spec parser's diagnostics: protobuf's messages turned into ones that
// name the field, what it takes, where a misplaced field belongs and the field a misspelt
// name meant.
#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "specs/options.pb.h"
#include "specs/spec_internal.h"

namespace mrcnn::spec::internal {

namespace gp = google::protobuf;

std::string joinPath(const std::vector<std::string>& parts, std::string_view last) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += '.';
    out += p;
  }
  if (!last.empty()) {
    if (!out.empty()) out += '.';
    out += last;
  }
  return out;
}

namespace {

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

const gp::Descriptor* descriptorAt(const std::vector<std::string>& blocks) {
  const gp::Descriptor* d = Experiment::descriptor();
  for (const auto& name : blocks) {
    const gp::FieldDescriptor* f = d ? d->FindFieldByName(name) : nullptr;
    d = f ? f->message_type() : nullptr;
  }
  return d;
}

// Where else a misplaced field lives: TAO users move fields between blocks.
std::string homeOf(std::string_view name) {
  const std::pair<const char*, const gp::Descriptor*> blocks[] = {
      {"the top level", Experiment::descriptor()},
      {"data_config", DataConfig::descriptor()},
      {"maskrcnn_config", MaskRCNNConfig::descriptor()},
      {"data_config.shapes_dataset", ShapesDataset::descriptor()}};
  for (const auto& [label, d] : blocks) {
    if (d->FindFieldByName(std::string(name))) return label;
  }
  return {};
}

}  // namespace

std::string typeName(const gp::FieldDescriptor* field) {
  switch (field->cpp_type()) {
    case gp::FieldDescriptor::CPPTYPE_UINT32:
    case gp::FieldDescriptor::CPPTYPE_UINT64:
      return "a non-negative integer";
    case gp::FieldDescriptor::CPPTYPE_INT32:
    case gp::FieldDescriptor::CPPTYPE_INT64:
      return "an integer";
    case gp::FieldDescriptor::CPPTYPE_FLOAT:
    case gp::FieldDescriptor::CPPTYPE_DOUBLE:
      return "a number";
    case gp::FieldDescriptor::CPPTYPE_BOOL:
      return "true or false";
    case gp::FieldDescriptor::CPPTYPE_STRING:
      return "a quoted string";
    case gp::FieldDescriptor::CPPTYPE_ENUM:
      return "one of the names of " + field->enum_type()->name();
    case gp::FieldDescriptor::CPPTYPE_MESSAGE:
      return "a block { ... }";
  }
  return "a value";
}

std::string unknownFieldMessage(std::string_view name, const std::vector<std::string>& blocks) {
  std::string message = "unknown field \"" + std::string(name) + "\" in " +
                        (blocks.empty() ? std::string("the top level") : joinPath(blocks));
  if (const std::string home = homeOf(name); !home.empty()) {
    message += "; it belongs in " + home;
    const bool home_encloses =
        home == "the top level" || (blocks.size() > 1 && home == blocks.front());
    if (home_encloses) message += " (is a closing '}' missing above it?)";
    return message;
  }
  if (const gp::Descriptor* d = descriptorAt(blocks)) {
    std::string best;
    std::size_t best_distance = std::max<std::size_t>(2, name.size() / 3) + 1;
    for (int k = 0; k < d->field_count(); ++k) {
      const std::string& candidate = d->field(k)->name();
      const std::size_t distance = editDistance(name, candidate);
      if (distance < best_distance) {
        best_distance = distance;
        best = candidate;
      }
    }
    if (!best.empty()) message += "; did you mean \"" + best + "\"?";
  }
  return message;
}

// The token an error message names: `no field named "x"`, `Value: "x"`, `got: x`.
std::string quotedToken(const std::string& message) {
  static const std::regex patterns[] = {
      std::regex(R"re(has no field named "([^"]*)")re"), std::regex(R"re(Value: "([^"]*)")re"),
      std::regex(R"re(field "([^"]*)" is specified)re"), std::regex(R"re(got: "?([^"]*)"?$)re")};
  std::smatch match;
  for (const auto& pattern : patterns) {
    if (std::regex_search(message, match, pattern) && match[1].length() > 0) {
      return match[1].str();
    }
  }
  return {};
}

Diagnostic::Kind classify(const std::string& message) {
  if (message.find("has no field named") != std::string::npos) {
    return Diagnostic::Kind::UnknownField;
  }
  static const char* type_markers[] = {"Expected integer",
                                       "Expected double",
                                       "Expected string",
                                       "Invalid value for boolean",
                                       "out of range",
                                       "Couldn't parse",
                                       "Unknown enumeration value",
                                       "Expected identifier, got: \""};
  for (const char* marker : type_markers) {
    if (message.find(marker) != std::string::npos) return Diagnostic::Kind::Type;
  }
  return Diagnostic::Kind::Syntax;
}

// Turns protobuf's message into one that names the field and what it takes.
std::string describeError(Diagnostic::Kind kind, const std::string& raw, std::string_view name,
                          const std::vector<std::string>& blocks, std::string_view found) {
  if (kind == Diagnostic::Kind::UnknownField) return unknownFieldMessage(name, blocks);
  if (kind == Diagnostic::Kind::Type) {
    const gp::Descriptor* d = descriptorAt(blocks);
    const gp::FieldDescriptor* f = d ? d->FindFieldByName(std::string(name)) : nullptr;
    if (f) {
      std::string shown = std::string(found);
      if (shown.empty())
        shown = "nothing";
      else if (shown.front() != '"' && shown.front() != '\'')
        shown = "'" + shown + "'";
      return "expected " + typeName(f) + ", found " + shown;
    }
  }
  if (raw.find("is specified multiple times") != std::string::npos) {
    return "given more than once";
  }
  if (raw.rfind("Expected identifier", 0) == 0) {
    if (found == "}") return "unexpected '}': no block is open here";
    return "expected a field name, found '" + std::string(found) + "'";
  }
  std::string message = raw;
  if (!message.empty() && message.back() == '.') message.pop_back();
  return message;
}

}  // namespace mrcnn::spec::internal

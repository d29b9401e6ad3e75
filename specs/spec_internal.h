// Shared between the spec loader and the validator; not part of the public API.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "specs/spec.h"

namespace google::protobuf {
class FieldDescriptor;
}  // namespace google::protobuf

namespace mrcnn::spec::internal {

// Where a field's value was written: a line of the file or a command-line override.
struct FieldLocation {
  std::string origin;
  int line = 0;          // 1-based, 0 for an override
  int column = 0;        // 1-based column of the field name
  int value_column = 0;  // 1-based column of the first character inside a string value
};

struct LocationMap {
  std::map<std::string, FieldLocation> fields;  // by dotted path
  std::string file_origin;
  std::set<std::string> unusable;  // fields dropped for a syntax or type error: not re-checked
};

// Semantic rules; appends to `out` and fills `resolved` with the decoded values.
void validate(const Experiment& spec, const LocationMap& locations, Resolved* resolved,
              std::vector<Diagnostic>* out);

// The wording of diagnostics (spec_messages.cpp).
// "a.b.c" from the enclosing blocks and a last name.
std::string joinPath(const std::vector<std::string>& parts, std::string_view last = {});
// The token a protobuf message quotes, empty if none.
std::string quotedToken(const std::string& message);
// What a field takes, for messages: "a number", "true or false", ...
std::string typeName(const google::protobuf::FieldDescriptor* field);
// The kind of a protobuf parse error.
Diagnostic::Kind classify(const std::string& message);
// "unknown field ..." with where it belongs, or the field it probably meant.
std::string unknownFieldMessage(std::string_view name, const std::vector<std::string>& blocks);
// Protobuf's message as one that names the field and what it takes.
std::string describeError(Diagnostic::Kind kind, const std::string& raw, std::string_view name,
                          const std::vector<std::string>& blocks, std::string_view found);

}  // namespace mrcnn::spec::internal

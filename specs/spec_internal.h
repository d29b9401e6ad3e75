// Shared between the spec loader and the validator; not part of the public API.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "specs/spec.h"

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

}  // namespace mrcnn::spec::internal

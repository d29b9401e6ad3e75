// The command line mrcnn-engine and mrcnn-data share: `--name value` or `--name=value`
// options, flags, `--set` repeated, `--annotations` repeated (dataset_stats takes several).
#pragma once

#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mrcnn::engine {

struct CommandLine {
  std::map<std::string, std::string> values;  // every option given once, by name
  std::vector<std::string> overrides;         // --set, in order
  std::vector<std::string> annotations;       // --annotations, in order
  bool help = false;                          // --help or -h (nothing after it is read)
  bool version = false;                       // --version

  bool has(const char* name) const { return values.count(name) > 0; }
  // The option's value, empty when it is not given.
  std::string get(const char* name) const;
  // --task, or "train".
  std::string task() const { return has("--task") ? get("--task") : "train"; }
};

// Reads `args` (without the program name); nullopt after saying what is wrong on `err`,
// followed by `usage`.
std::optional<CommandLine> parseCommandLine(const std::vector<std::string>& args,
                                            std::ostream& err, const char* usage);

// The running program's name for messages (mrcnn-engine, mrcnn-data; a test's own name when
// a test calls the command line in its process).
const char* programName();

// A whole number from `min` (at most 9 digits), or nullopt.
std::optional<int64_t> wholeNumber(const std::string& text, int64_t min);

}  // namespace mrcnn::engine

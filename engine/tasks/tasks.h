// The tasks mrcnn-engine runs. Each writes its report to `out`, problems to `err`, and
// returns an exit code of engine/exit_codes.h.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace mrcnn::engine {

struct TaskOptions {
  std::string task;
  std::filesystem::path spec_path;
  std::filesystem::path run_dir;  // empty: <output_dir>/<run name> from the spec
  std::vector<std::string> overrides;
};

// Prints the resolved spec (every default filled in) or every error of it.
int runValidate(const TaskOptions& options, std::ostream& out, std::ostream& err);

// Prepares a training run: validates the spec, picks the device, creates the run
// directory with the spec as run, and makes the data ready (generating the embedded
// shapes dataset when the spec asks for it).
int runTrain(const TaskOptions& options, std::ostream& out, std::ostream& err);

}  // namespace mrcnn::engine

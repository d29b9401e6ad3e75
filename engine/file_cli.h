// The command line of the tasks on files (engine/file_tasks.h): mrcnn-data's whole command
// line, and the part of mrcnn-engine's that runs those tasks. No LibTorch.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "engine/cli_args.h"
#include "engine/tasks/tasks.h"

namespace mrcnn::engine {

// The usage lines of the tasks on files, naming `program`.
std::string fileTaskUsage(const std::string& program);

// Runs a task on files (isFileTask(c.task(), c.has("--spec"))); returns the exit code.
int runFileTask(const CommandLine& c, std::ostream& out, std::ostream& err);

// The label check's options (file and spec mode); nullopt after saying what is wrong.
std::optional<LabelCheckOptions> labelCheckOptions(const CommandLine& c, std::ostream& err);

// mrcnn-data on `args` (without the program name): the tasks on files, and a clear refusal
// of the others (they need mrcnn-engine).
int dataMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace mrcnn::engine

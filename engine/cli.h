// Command line of mrcnn-engine: `mrcnn-engine --spec S --task T [--run-dir D] [--set k=v]...`
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace mrcnn::engine {

// Runs the engine on `args` (without the program name); returns the exit code.
int engineMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace mrcnn::engine

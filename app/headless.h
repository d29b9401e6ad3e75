// `mrcnn-workbench --headless SPEC [--task T] [--set k=v]... [--run-dir D]`: the GUI's
// launcher without windows. It starts mrcnn-engine with the same arguments, passes its
// output through, forwards SIGINT/SIGTERM to it, and exits with its exit code.
#pragma once

#include <string>
#include <vector>

namespace mrcnn::app {

// `args` are the arguments after --headless. `self` is argv[0], to find the engine beside it.
int runHeadless(const std::vector<std::string>& args, const std::string& self);

}  // namespace mrcnn::app

// `mrcnn-workbench --headless SPEC [--task T] [--set k=v]... [--run-dir D]`: the GUI's
// launcher without windows. It starts mrcnn-engine with the same arguments, renders the
// events on its stdout for the terminal (app/event_render.h; other lines pass through, its
// stderr goes straight on), forwards SIGINT/SIGTERM sent to the launcher alone (Ctrl-C
// reaches the engine from the terminal itself), and exits with the engine's exit code
// (128+N when it was killed by signal N).
#pragma once

#include <string>
#include <vector>

namespace mrcnn::app {

// `args` are the arguments after --headless. `self` is argv[0], to find the engine beside it.
int runHeadless(const std::vector<std::string>& args, const std::string& self);

}  // namespace mrcnn::app

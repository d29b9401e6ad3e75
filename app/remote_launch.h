// `mrcnn-workbench --headless SPEC --host NAME [...]`: the run on a host of the hosts file
// (remote/hosts.h) instead of this machine. The spec goes there, the host's engine checks it
// (its messages shown as a local validate's), the engine starts detached (closing the
// terminal or losing the link does not stop it), its events are followed and rendered as a
// local run's, Ctrl-C asks it to stop gracefully, and at the end the run folder comes back
// into the local run directory (--run-dir, else where a local run of the spec would go).
// Running the same command again resumes the run there, as the engine resumes locally.
#pragma once

#include <string>
#include <vector>

#include "app/event_render.h"

namespace mrcnn::app {

struct HostLaunch {
  std::string host;                      // the host's name in the hosts file
  std::string spec_path;                 // the local spec
  std::vector<std::string> overrides;    // --set values
  std::vector<std::string> engine_args;  // the rest for the engine (--task, --set, ...)
  std::string local_run_dir;             // --run-dir: where the run comes back
  bool raw_events = false;
  RenderOptions render;
  // --bring-back: only the run folder as it is there now into the local run directory (the
  // checkpoints of a run still going, for Predictions or Export), nothing started.
  bool bring_back_only = false;
};

// Returns the engine's exit code there, or 1 (the host cannot be reached or used), 2 (an
// unknown host, a bad hosts file or command line).
int runOnHost(const HostLaunch& launch);

}  // namespace mrcnn::app

// Graceful stop for the engine (../shared/DESIGN.md, "Stop"): the first SIGINT or SIGTERM
// sets a flag the training loop polls between steps (it then finishes the step, writes a
// checkpoint, emits `done: stopped` and exits 0); a second one exits at once with 128 + the
// signal's number. The handler does only async-signal-safe work (a lock-free atomic and
// _exit).
#pragma once

namespace mrcnn::train {

class StopSignal {
 public:
  // Installs the handlers for SIGINT and SIGTERM (process-wide; once is enough, again is
  // harmless) and clears the flag.
  static void install();
  // Puts back the handlers that were there before install().
  static void uninstall();

  static bool requested();
  // The signal that asked to stop (SIGINT or SIGTERM), 0 when none.
  static int signal();
  // Clears the flag (tests; a task that handled a stop and goes on).
  static void reset();
};

}  // namespace mrcnn::train

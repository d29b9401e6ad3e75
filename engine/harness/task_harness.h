// The one entry of every task of mrcnn-engine. The harness loads the spec (every diagnostic
// reported; kExitBadSpec when it has errors), finds the run directory, opens the task's events
// (kExitBadData when they cannot be written), runs the task's body, and ends whatever escapes
// the body through the one failure path, TaskReport::fail, with the exit code that kind of
// failure has in every task:
//   bad command line kExitUsage (the body returns it), a spec with errors kExitBadSpec, a
//   dataset, checkpoint, path, unwritable run directory or full disk kExitBadData, anything
//   else while running kExitFailed.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "engine/events/event_writer.h"
#include "engine/exit_codes.h"
#include "engine/events/task_report.h"
#include "specs/spec.h"

namespace mrcnn::engine {

// Faults a test injects into a real run (MRCNN_TEST_FAULTS, a comma-separated list), read once
// by the command line: the one place where product code looks at a test's switch.
struct TestFaults {
  bool skip_allreduce = false;  // data-parallel ranks skip the gradients' all-reduce
  bool skip_bn_sync = false;    // trainable batch norm normalises with each rank's own batch
};
TestFaults testFaultsFromEnvironment();

// What the command line gives every task run from a spec.
struct TaskOptions {
  std::string task;
  std::filesystem::path spec_path;
  std::filesystem::path run_dir;  // empty: <output_dir>/<run name> from the spec
  std::vector<std::string> overrides;
  std::filesystem::path checkpoint;  // --checkpoint: weights instead of the run's or the spec's
  TestFaults test_faults;
  // False for a task another runs inside its own (label_check training its folds): the
  // events go to the run directory only, stdout carries the outer task's.
  bool events_to_stdout = true;
};

// Where a task's events go besides stdout.
enum class RunDirEvents {
  Always,    // the run directory is created and its events.jsonl and log.txt get them
  IfExists,  // only when --run-dir names it or it exists already (a task that reads a run)
  Never,     // stdout only (a task with no run directory: benchmark, tasks on files)
};

// How one task enters: declared beside its body in its own file, e.g.
//   const auto entry = TaskEntry("export").runDirEvents(RunDirEvents::IfExists);
struct TaskEntry {
  explicit TaskEntry(std::string task_name) : name(std::move(task_name)) {}

  // A task on files alone: no spec, no run directory, stdout only.
  TaskEntry& onFiles() {
    from_spec = false;
    run_dir_events = RunDirEvents::Never;
    return *this;
  }
  TaskEntry& runDirEvents(RunDirEvents where) {
    run_dir_events = where;
    return *this;
  }
  // Whether the run directory gets the events when that depends on the task's own options
  // (inference: only when it writes into the run); overrides runDirEvents.
  TaskEntry& ownsRunDir(std::function<bool(const std::filesystem::path& run_dir)> owns) {
    owns_run_dir = std::move(owns);
    return *this;
  }
  // Lines of text to out and err instead of events (a task run by another, a task on files
  // that prints its own report).
  TaskEntry& textReport(bool text = true) {
    events = !text;
    return *this;
  }
  // SIGINT/SIGTERM finish the current step or image and end the task with status "stopped".
  TaskEntry& gracefulStop(bool on = true) {
    graceful_stop = on;
    return *this;
  }
  // The writer's options beyond the events file (a data-parallel rank: stdout off, its rank;
  // it may also say that this process does not write the run directory).
  TaskEntry& configureEvents(
      std::function<void(train::EventWriterOptions&, bool& owns_run_dir)> configure) {
    configure_events = std::move(configure);
    return *this;
  }
  // A folder of the task's own for events.jsonl and log.txt, given the run directory (empty
  // for a task on files): the task's output folder (label_check) rather than the run's.
  TaskEntry& eventsDir(std::function<std::filesystem::path(const std::filesystem::path& run_dir)> dir) {
    events_dir = std::move(dir);
    return *this;
  }
  // The error event's code of an unexpected failure (default "<task>_failed").
  TaskEntry& failureCode(std::string code) {
    failure_code = std::move(code);
    return *this;
  }

  std::string name;  // the --task name
  bool from_spec = true;
  RunDirEvents run_dir_events = RunDirEvents::Always;
  std::function<bool(const std::filesystem::path& run_dir)> owns_run_dir;
  bool events = true;
  bool graceful_stop = false;
  std::function<void(train::EventWriterOptions&, bool& owns_run_dir)> configure_events;
  std::function<std::filesystem::path(const std::filesystem::path& run_dir)> events_dir;
  std::string failure_code;
};

// What a task's body works with.
struct TaskContext {
  const TaskOptions& options;
  const spec::LoadedSpec* loaded = nullptr;  // null for a task on files
  std::filesystem::path run_dir;             // empty for a task on files
  bool has_run_dir = false;                  // the run directory gets this task's events
  TaskReport& report;

  const spec::LoadedSpec& spec() const { return *loaded; }
};

// Runs `body` as `entry` says; returns the exit code.
int runTask(const TaskEntry& entry, const TaskOptions& options, std::ostream& out,
            std::ostream& err, const std::function<int(TaskContext&)>& body);
// The same for a task on files (entry.onFiles()): no spec options.
int runTask(const TaskEntry& entry, std::ostream& out, std::ostream& err,
            const std::function<int(TaskContext&)>& body);

// --run-dir, or <output_dir>/<run name> from the spec.
std::filesystem::path runDirectory(const TaskOptions& options, const spec::LoadedSpec& loaded);

}  // namespace mrcnn::engine

// What the tasks run from a spec share: loading the spec (every diagnostic reported), the run
// directory, the dataset files the spec names (generating the embedded shapes dataset when it
// asks for it), where the weights come from, and how a task reports (events or text).
#pragma once

#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include "dataset/coco/coco.h"
#include "engine/eval/evaluator.h"
#include "engine/tasks/tasks.h"
#include "engine/train/event_writer.h"
#include "specs/spec.h"

namespace mrcnn::engine {

// Prints every diagnostic to `err`; std::nullopt when the spec has errors (the caller exits
// with kExitBadSpec).
std::optional<spec::LoadedSpec> loadSpecReporting(const TaskOptions& options, std::ostream& err);

// --run-dir, or <output_dir>/<run name> from the spec.
std::filesystem::path runDirectory(const TaskOptions& options, const spec::LoadedSpec& loaded);

struct DataFiles {
  std::filesystem::path train_image_dir, train_json;
  std::filesystem::path val_image_dir, val_json;
};

// Which of the spec's dataset paths a task reads. Only those are checked: a task never refuses
// a path it does not use (inference on --images runs with a spec whose datasets are on
// another machine).
struct DataNeeds {
  bool train = true;       // train_json_file and train_image_dir, where named
  bool val_json = true;    // val_json_file, where named
  bool val_images = true;  // val_image_dir, where named
};

// The spec's datasets, the shapes dataset generated (or found up to date) when asked for.
// Checks that what is named and needed exists; std::nullopt after reporting to `err` when not
// (the caller exits with kExitBadData). `out` gets one line per dataset.
std::optional<DataFiles> prepareData(const spec::LoadedSpec& loaded, std::ostream& out,
                                     std::ostream& err, const DataNeeds& needs = {});

// The spec's own weights, relative to its folder: pruned_model_path (a pruned model, which as
// in TAO wins over checkpoint), else checkpoint. Empty when it names none. Training starts
// from them; the other tasks use them when there is no run yet.
std::filesystem::path startingWeights(const spec::LoadedSpec& loaded);

// The weights a task runs with: --checkpoint, else the run directory's last checkpoint (the
// checkpoints/last pointer), else the spec's (startingWeights). Empty when there are none;
// weightsSearched() then says what was looked for.
std::filesystem::path weightsFile(const TaskOptions& options, const spec::LoadedSpec& loaded,
                                  const std::filesystem::path& run_dir);
std::string weightsSearched(const TaskOptions& options, const std::filesystem::path& run_dir);

// An evaluation's result as an eval event's summary, categories named from the ground truth.
train::CocoSummary cocoSummary(const eval::EvalResult& result, const dataset::CocoDataset& gt);

// How a task reports while it runs: as events (stdout, <run dir>/events.jsonl and log.txt)
// when it has a writer, else as lines of text to `out` and `err` (a task run by another, e.g.
// the train task's overlays, whose own events say what matters). Errors also go to `err`
// either way: a launcher that shows the engine's last error line finds them there.
class TaskReport {
 public:
  TaskReport(train::EventWriter* events, std::ostream& out, std::ostream& err);

  bool events() const { return events_ != nullptr; }
  // Writes the event (nothing without a writer).
  void write(events::Event event);
  void log(const std::string& text);
  void warn(const std::string& code, const std::string& message, int64_t image_id = 0);
  // The error, then done: failed. Returns exit_code. Each event reaches stdout even when the
  // run directory's files can no longer be appended to (a full disk): stderr then says so.
  int fail(const std::string& code, const std::string& message, int exit_code);
  // A failure caught as an exception: a full disk is "disk_full" with kExitBadData wherever it
  // happens; anything else is `code` with `context` before the exception's text.
  int fail(const std::exception& e, const std::string& code, const std::string& context,
           int exit_code);
  double elapsed() const;

 private:
  train::EventWriter* events_;
  std::ostream& out_;
  std::ostream& err_;
  std::chrono::steady_clock::time_point started_;
};

// A task's output folder assembled beside its final place (".<name>.partial", the remains of a
// task that died there removed first) and renamed into it whole (over an empty folder too):
// removed on the way out unless moved.
class StagingDir {
 public:
  explicit StagingDir(const std::filesystem::path& final_dir);
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  void moveTo(const std::filesystem::path& final_dir);

 private:
  std::filesystem::path path_;
  bool kept_ = false;
};

// The event writer of a task run from a spec: events on stdout and, when `run_dir` is not
// empty, in its events.jsonl and log.txt (the folder is created). Null after saying why to
// `err` (the caller exits with kExitBadData).
std::unique_ptr<train::EventWriter> openTaskEvents(const std::filesystem::path& run_dir,
                                                   std::ostream& err);

// Where a task on the spec's model reports: the spec as loaded, its run directory, whether
// that exists (or was given: its events.jsonl and log.txt then get the events too) and the
// report.
struct ModelTaskContext {
  const spec::LoadedSpec& loaded;
  std::filesystem::path run_dir;
  bool has_run_dir = false;
  TaskReport& report;
};

// Runs a task on the spec's model (export, prune): loads the spec (kExitBadSpec when it has
// errors), opens the events (kExitBadData when they cannot be written), runs `task`; an
// exception escaping it is reported with its exit code (a full disk kExitBadData, else
// kExitFailed).
int runModelTask(const TaskOptions& options, std::ostream& out, std::ostream& err,
                 const std::function<int(const ModelTaskContext&)>& task);

// A full disk (io::DiskFullError) is the same failure wherever it happens: exit code
// kExitBadData, event code "disk_full", the message naming the folder and the space needed.
bool isDiskFull(const std::exception& e);
int exitCodeFor(const std::exception& e, int otherwise);

// Writes the error and done events of a failed task, each on its own: when the run
// directory's files cannot be appended to, stdout still gets both and `err` says why once.
void writeFailureEvents(train::EventWriter& events, const std::string& code,
                        const std::string& message, int exit_code, double elapsed_seconds,
                        std::ostream& err);

// The resident memory of this process in MiB (0 where /proc is not available).
double processResidentMiB();

}  // namespace mrcnn::engine

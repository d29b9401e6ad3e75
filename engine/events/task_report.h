// How a task reports while it runs: as events (stdout, <run dir>/events.jsonl and log.txt)
// when it has an event writer, else as lines of text. The one failure path of every task
// (TaskReport::fail: the error, then done: failed, and the exit code) lives here.
#pragma once

#include <chrono>
#include <exception>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <string>

#include "dataset/coco/coco.h"
#include "engine/events/event_writer.h"
#include "eval/evaluator.h"

namespace mrcnn::engine {

// How a task reports while it runs: as events (stdout, <run dir>/events.jsonl and log.txt)
// when it has a writer, else as lines of text to `out` and `err` (a task run by another, e.g.
// the train task's overlays, whose own events say what matters, or a task on files alone).
// Errors also go to `err` either way: a launcher that shows the engine's last error line finds
// them there.
class TaskReport {
 public:
  TaskReport(train::EventWriter* events, std::ostream& out, std::ostream& err);

  bool events() const { return events_ != nullptr; }
  train::EventWriter* writer() const { return events_; }
  std::ostream& out() const { return out_; }
  std::ostream& err() const { return err_; }
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
  // Prefixes every error message (a data-parallel rank names itself: "rank 2: ").
  void setErrorPrefix(std::string prefix) { error_prefix_ = std::move(prefix); }
  double elapsed() const;

 private:
  train::EventWriter* events_;
  std::ostream& out_;
  std::ostream& err_;
  std::string error_prefix_;
  std::chrono::steady_clock::time_point started_;
};

// A full disk (io::DiskFullError) is the same failure wherever it happens: exit code
// kExitBadData, event code "disk_full", the message naming the folder and the space needed.
bool isDiskFull(const std::exception& e);
int exitCodeFor(const std::exception& e, int otherwise);

// Writes the error and done events of a failed task, each on its own: when the run
// directory's files cannot be appended to, stdout still gets both and `err` says why once.
void writeFailureEvents(train::EventWriter& events, const std::string& code,
                        const std::string& message, int exit_code, double elapsed_seconds,
                        std::ostream& err);

// An evaluation's result as an eval event's summary, categories named from the ground truth.
train::CocoSummary cocoSummary(const eval::EvalResult& result, const dataset::CocoDataset& gt);

}  // namespace mrcnn::engine

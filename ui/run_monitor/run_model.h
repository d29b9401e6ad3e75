// One run as the monitor knows it: the series the engine's events carry (step → value), its
// status, progress, log and how it ended. Plain data, no widgets: fed one JSON line at a time
// (specs/events.proto), from the engine's stdout while it runs or from <run dir>/events.jsonl
// when a finished run is reopened. A bad line is a warning, never a crash.
#pragma once

#include <QHash>
#include <QString>
#include <QStringList>
#include <QVector>
#include <optional>

namespace mrcnn::events {
class Event;
class Losses;
}  // namespace mrcnn::events

namespace mrcnn::ui {

// Values against step, steps increasing. A step at or before the last one (a resumed run
// repeating the steps after its checkpoint) replaces what came after it.
struct Series {
  QVector<double> steps;
  QVector<double> values;

  void add(double step, double value);
  void truncateAfter(double step);  // drops the points with a step greater than `step`
  bool isEmpty() const { return steps.isEmpty(); }
  int size() const { return steps.size(); }
};

// The series the model keeps, in display order: key (CSV column), title.
struct SeriesInfo {
  QString key;
  QString title;
};
const QVector<SeriesInfo>& seriesCatalog();

// The 12 COCO summary statistics in pycocotools' order, as used in the series keys
// ("bbox_AP", "segm_AR100", ...).
const QStringList& cocoStatNames();

enum class RunStatus {
  NotStarted,  // no start event yet
  Running,
  Stopping,    // Stop was sent; waiting for the engine's done event
  Ok,          // done ok
  Stopped,     // done stopped (a graceful stop)
  Failed,      // done failed (the engine reported the failure and ended)
  Crashed,     // killed by a signal, or the process ended without a done event
  Unreadable,  // reopened from a directory whose events.jsonl cannot be read
};
QString statusName(RunStatus status);
bool isFinished(RunStatus status);

// The training run a checkpoint belongs to: <run> when `weights` is <run>/checkpoints/<file>
// and <run>/spec.txt exists (absolute); empty otherwise (weights from elsewhere).
QString runOfCheckpoint(const QString& weights);

// How the engine process ended (absent for a run reopened from its files).
struct ProcessExit {
  int exit_code = 0;  // the exit code, or the signal number when `signal` is true
  bool signal = false;
  QString description()
      const;  // "exit code 1 (the task failed while running)", "signal 9 (Killed)"
};

// The outcome of feeding one line.
struct LineResult {
  bool event = false;  // the line was an event and was applied
  QString warning;     // why the line was not used, or what was odd about it (empty if nothing)
};

class RunModel {
 public:
  RunModel() = default;

  // Applies one line of JSON (a trailing newline is allowed). Blank lines are ignored.
  LineResult addLine(const QString& line);
  void addEvent(const mrcnn::events::Event& event);

  // Reads <run dir>/events.jsonl (or the file itself when given a file) into a new model.
  // Bad lines give warnings "events.jsonl:LINE: why"; a missing file gives std::nullopt and
  // *error.
  struct Loaded;
  static std::optional<Loaded> loadFile(const QString& runDirOrFile, QString* error = nullptr);

  // A run reopened from its events.jsonl that ends without a done event is Crashed unless
  // it is being followed (its engine runs elsewhere, e.g. headless in a terminal): then it is
  // Running again. False when the events did not end that way.
  bool setFollowed();
  bool isFollowed() const { return followed_; }

  // The engine process ended: decides between Ok, Stopped, Failed and Crashed.
  void setProcessExit(const ProcessExit& exit);
  // An engine is being started on this run (again): what the last one said about how it
  // ended no longer holds.
  void setLaunching();
  // The engine could not be started at all.
  void setStartFailure(const QString& message);
  // The run's events could not be read (reopening).
  void setUnreadable(const QString& message);
  void setStopping();
  // A line for the log (the command run, stdout that is not an event).
  void appendLog(const QString& line);
  // A line of the engine's stderr: logged, and the last one is the error a crash shows when
  // the engine had no time to send an error event.
  void appendStderr(const QString& line);

  const Series* series(const QString& key) const;
  const QHash<QString, Series>& allSeries() const { return series_; }

  RunStatus status() const { return status_; }
  QString task() const { return task_; }
  QString device() const { return device_; }
  // Processes the last start event named (data-parallel ranks; 1 when not distributed).
  int worldSize() const { return world_size_; }
  QString specPath() const { return spec_path_; }
  QString runDir() const { return run_dir_; }
  double step() const { return step_; }
  double totalSteps() const { return total_steps_; }
  // 0..1, or -1 when the total is unknown.
  double progress() const;
  // Seconds left as the engine estimates it, else from the rate of recent steps; -1 unknown.
  double etaSeconds() const { return eta_seconds_; }
  QString lastError() const { return last_error_; }
  QString summary() const { return summary_; }
  std::optional<ProcessExit> processExit() const { return exit_; }
  const QStringList& log() const { return log_; }
  int eventCount() const { return event_count_; }
  int warningCount() const { return warning_count_; }
  // The last checkpoint written (empty if none), the step it holds, and the best one.
  QString lastCheckpoint() const { return last_checkpoint_; }
  double lastCheckpointStep() const { return last_checkpoint_step_; }
  QString bestCheckpoint() const { return best_checkpoint_; }
  // Warning events the engine sent (bad images or annotations, a NaN loss skipped, ...).
  int engineWarnings() const { return engine_warning_count_; }
  // The last evaluation: its step (-1 when none) and AP of each IoU type (-1 when absent).
  double lastEvalStep() const { return last_eval_step_; }
  double lastBboxAp() const { return last_bbox_ap_; }
  double lastSegmAp() const { return last_segm_ap_; }
  // Checkpoints, the last evaluation and the engine's warnings in one line ("" when none).
  QString detailsLine() const;

  // One line a human reads about how the run ended or where it is (a weights download while
  // one is under way: "Downloading torchvision:resnet50: 25.0 MB of 100.0 MB, ...").
  QString statusLine() const;
  // The weights download under way ("" when none).
  QString download() const { return download_; }

 private:
  void addPoint(const QString& key, double step, double value);
  // The six losses as series prefix + "total", prefix + "rpn_objectness", ...
  void addLosses(const QString& prefix, double step, const mrcnn::events::Losses& losses);

  QHash<QString, Series> series_;
  RunStatus status_ = RunStatus::NotStarted;
  bool done_seen_ = false;
  QString done_status_;
  QString task_, device_, spec_path_, run_dir_;
  int world_size_ = 1;
  double step_ = 0, total_steps_ = 0;
  double eta_seconds_ = -1;
  // For the rate estimate when the engine gives no ETA.
  double rate_step0_ = -1, rate_time0_ = 0;
  QString last_error_;
  QString last_stderr_;
  QString summary_;
  std::optional<ProcessExit> exit_;
  QStringList log_;
  int event_count_ = 0;
  int warning_count_ = 0;
  QString last_checkpoint_, best_checkpoint_;
  double last_checkpoint_step_ = -1;
  int engine_warning_count_ = 0;
  double last_eval_step_ = -1, last_bbox_ap_ = -1, last_segm_ap_ = -1;
  bool cut_short_ = false;
  bool followed_ = false;
  QString download_;
  QString queue_;  // a SLURM job's place in the queue before it runs
};

struct RunModel::Loaded {
  RunModel model;
  QStringList warnings;
  QString path;            // the events file read
  qint64 bytes = 0;        // up to the end of its last complete line
  bool cut_short = false;  // the events end without a done event
};

}  // namespace mrcnn::ui

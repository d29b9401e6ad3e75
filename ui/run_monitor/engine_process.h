// One mrcnn-engine child process feeding a RunModel: the GUI never trains in its own process,
// so an engine that crashes or runs out of memory leaves the window and the run directory
// intact. Stdout is read line by line as events; stderr (and stdout that is not an event) goes
// to the run's log. Stop asks for a graceful stop (SIGINT: the engine finishes its step,
// writes a checkpoint and says `done stopped`); a second Stop kills it.
//
// A data-parallel training run (nproc_per_node > 1) runs the workbench's headless launcher
// instead (mrcnn-workbench --headless --raw-events --nproc-per-node N), which starts the
// ranks, passes rank 0's events through unchanged, forwards SIGINT to every rank and takes
// them with it when killed: to this class it is one engine. A run on a host of the hosts file
// (host set: remote/hosts.h) runs the launcher too (--headless --raw-events --host NAME): it
// puts the spec there, starts the engine detached, passes its events through as it follows
// them, turns SIGINT into the engine's graceful stop there, and brings the run folder back
// into the run directory at the end.
#pragma once

#include <QByteArray>
#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>

namespace mrcnn::ui {

class RunModel;

class EngineProcess : public QObject {
  Q_OBJECT

 public:
  struct Options {
    QString spec_path;
    QString task = QStringLiteral("train");
    QString run_dir;
    QStringList overrides;       // "path.to.field=value", each passed as --set
    QStringList task_arguments{};  // the task's own options, after the others (--output-dir ...)
    int nproc_per_node = 1;      // engine processes (ranks) on this machine; > 1 runs the launcher
    QString host{};              // a host of the hosts file; empty: this machine
  };

  // What start() runs: a program and its arguments.
  struct Command {
    QString program;
    QStringList arguments;
  };

  // `model` is not owned and must outlive the process object.
  EngineProcess(RunModel* model, QObject* parent = nullptr);
  ~EngineProcess() override;

  // The engine binary: $MRCNN_ENGINE, else mrcnn-engine beside this executable.
  static QString enginePath();
  // The launcher of data-parallel runs: $MRCNN_WORKBENCH, else mrcnn-workbench beside
  // enginePath().
  static QString launcherPath();
  // The engine's arguments (--spec, --task, --run-dir, --set..., the task's).
  static QStringList arguments(const Options& options);
  // The engine with arguments(), or for nproc_per_node > 1 the launcher with
  // --headless --raw-events --nproc-per-node N before them, or for a host the launcher with
  // --headless --raw-events --host NAME. Starts nothing.
  static Command command(const Options& options);

  // Starts the engine; false when it is already running. Start failures are reported through
  // the model (status Crashed with the reason) and finished().
  bool start(const Options& options);
  // `--task train` again on the same run directory: the engine resumes from its last checkpoint,
  // with as many processes as before.
  bool resume();
  // First call: SIGINT (graceful). Second call while it still runs: SIGKILL.
  void stop();

  bool isRunning() const { return process_.state() != QProcess::NotRunning; }
  const Options& options() const { return options_; }
  qint64 processId() const { return process_.processId(); }
  int stopRequests() const { return stop_requests_; }

  // The bytes of stdout as they arrive; lines are applied as they complete. Public so that
  // events from another source (a test, a file being followed) go the same way.
  void feedStdout(const QByteArray& bytes);

 signals:
  // Events or log lines were added to the model (emitted per chunk read, not per line).
  void modelChanged();
  // Lines of stdout that were not events, with why.
  void warning(const QString& message);
  void finished();

 private:
  void feedStderr(const QByteArray& bytes);
  void onFinished(int exit_code, QProcess::ExitStatus status);
  void onError(QProcess::ProcessError error);
  void flushPartialLines();

  RunModel* model_;
  QProcess process_;
  Options options_;
  QByteArray stdout_buffer_, stderr_buffer_;
  int stop_requests_ = 0;
  bool finish_reported_ = false;
};

}  // namespace mrcnn::ui

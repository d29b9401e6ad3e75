#include "ui/run_monitor/engine_process.h"

#include <signal.h>

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QProcessEnvironment>

#include "ui/run_monitor/run_model.h"

namespace mrcnn::ui {

EngineProcess::EngineProcess(RunModel* model, QObject* parent) : QObject(parent), model_(model) {
  process_.setProcessChannelMode(QProcess::SeparateChannels);
  connect(&process_, &QProcess::readyReadStandardOutput, this,
          [this] { feedStdout(process_.readAllStandardOutput()); });
  connect(&process_, &QProcess::readyReadStandardError, this,
          [this] { feedStderr(process_.readAllStandardError()); });
  connect(&process_, &QProcess::finished, this, &EngineProcess::onFinished);
  connect(&process_, &QProcess::errorOccurred, this, &EngineProcess::onError);
}

EngineProcess::~EngineProcess() {
  // Closing the window must not leave an engine training unseen: ask it to stop, then wait a
  // little for its checkpoint before killing it.
  if (process_.state() != QProcess::NotRunning) {
    process_.disconnect(this);
    if (process_.processId() > 0) ::kill(static_cast<pid_t>(process_.processId()), SIGINT);
    if (!process_.waitForFinished(5000)) {
      process_.kill();
      process_.waitForFinished(1000);
    }
  }
}

QString EngineProcess::enginePath() {
  const QString env = QProcessEnvironment::systemEnvironment().value("MRCNN_ENGINE");
  if (!env.isEmpty()) return env;
  return QDir(QCoreApplication::applicationDirPath()).filePath("mrcnn-engine");
}

QString EngineProcess::launcherPath() {
  const QString env = QProcessEnvironment::systemEnvironment().value("MRCNN_WORKBENCH");
  if (!env.isEmpty()) return env;
  return QFileInfo(enginePath()).dir().filePath("mrcnn-workbench");
}

QStringList EngineProcess::arguments(const Options& options) {
  QStringList args;
  if (!options.spec_path.isEmpty()) args << "--spec" << options.spec_path;
  if (!options.task.isEmpty()) args << "--task" << options.task;
  if (!options.run_dir.isEmpty()) args << "--run-dir" << options.run_dir;
  for (const QString& o : options.overrides)
    args << "--set" << o;
  return args + options.task_arguments;
}

EngineProcess::Command EngineProcess::command(const Options& options) {
  if (!options.host.isEmpty()) {
    return {launcherPath(),
            QStringList{"--headless", "--raw-events", "--host", options.host} + arguments(options)};
  }
  if (options.nproc_per_node <= 1) return {enginePath(), arguments(options)};
  // --raw-events: the launcher would otherwise render the events for a terminal.
  return {launcherPath(), QStringList{"--headless", "--raw-events", "--nproc-per-node",
                                      QString::number(options.nproc_per_node)} +
                              arguments(options)};
}

bool EngineProcess::start(const Options& options) {
  if (isRunning()) return false;
  options_ = options;
  stop_requests_ = 0;
  finish_reported_ = false;
  stdout_buffer_.clear();
  stderr_buffer_.clear();
  model_->setLaunching();
  const Command command = EngineProcess::command(options);
  model_->appendLog(QStringLiteral("$ %1 %2").arg(command.program, command.arguments.join(' ')));
  process_.start(command.program, command.arguments);
  emit modelChanged();
  return true;
}

bool EngineProcess::resume() {
  Options again = options_;
  again.task = QStringLiteral("train");
  // The run directory keeps the spec as run; prefer it so that an edited spec file does not
  // change a run half way.
  const QString as_run = QDir(again.run_dir).filePath("spec.txt");
  if (!again.run_dir.isEmpty() && QFileInfo::exists(as_run)) again.spec_path = as_run;
  return start(again);
}

void EngineProcess::stop() {
  if (!isRunning()) return;
  ++stop_requests_;
  // No pid yet (the child is still being created): kill(0, ...) would signal the GUI's own
  // process group, so the only safe stop is QProcess's own kill.
  if (stop_requests_ == 1 && process_.processId() > 0) {
    model_->setStopping();
    model_->appendLog(QStringLiteral("Stop: asked the engine to stop (SIGINT)"));
    ::kill(static_cast<pid_t>(process_.processId()), SIGINT);
  } else {
    model_->appendLog(QStringLiteral("Stop again: killing the engine"));
    process_.kill();
  }
  emit modelChanged();
}

void EngineProcess::feedStdout(const QByteArray& bytes) {
  stdout_buffer_ += bytes;
  qsizetype begin = 0;
  for (qsizetype nl; (nl = stdout_buffer_.indexOf('\n', begin)) >= 0; begin = nl + 1) {
    const QString line = QString::fromUtf8(stdout_buffer_.constData() + begin, nl - begin);
    const LineResult r = model_->addLine(line);
    if (!r.event && !line.trimmed().isEmpty()) model_->appendLog(line);
    if (!r.warning.isEmpty()) emit warning(r.warning);
  }
  stdout_buffer_.remove(0, begin);
  emit modelChanged();
}

void EngineProcess::feedStderr(const QByteArray& bytes) {
  stderr_buffer_ += bytes;
  qsizetype begin = 0;
  for (qsizetype nl; (nl = stderr_buffer_.indexOf('\n', begin)) >= 0; begin = nl + 1)
    model_->appendStderr(QString::fromUtf8(stderr_buffer_.constData() + begin, nl - begin));
  stderr_buffer_.remove(0, begin);
  emit modelChanged();
}

void EngineProcess::flushPartialLines() {
  feedStdout(process_.readAllStandardOutput() + (stdout_buffer_.isEmpty() ? "" : "\n"));
  if (!stderr_buffer_.isEmpty()) feedStderr("\n");
  feedStderr(process_.readAllStandardError());
}

void EngineProcess::onFinished(int exit_code, QProcess::ExitStatus status) {
  if (finish_reported_) return;
  finish_reported_ = true;
  flushPartialLines();
  // On Unix, QProcess reports the signal number as the exit code of a crashed child.
  model_->setProcessExit({exit_code, status == QProcess::CrashExit});
  emit modelChanged();
  emit finished();
}

void EngineProcess::onError(QProcess::ProcessError error) {
  if (error != QProcess::FailedToStart || finish_reported_) return;
  finish_reported_ = true;
  // A data-parallel run starts the launcher, which has a variable of its own.
  const bool launcher = options_.nproc_per_node > 1 || !options_.host.isEmpty();
  model_->setStartFailure(
      QStringLiteral("cannot start the %1 %2: %3 (set %4 to its path)")
          .arg(launcher ? QStringLiteral("launcher") : QStringLiteral("engine"), process_.program(),
               process_.errorString(),
               launcher ? QStringLiteral("MRCNN_WORKBENCH") : QStringLiteral("MRCNN_ENGINE")));
  emit modelChanged();
  emit finished();
}

}  // namespace mrcnn::ui

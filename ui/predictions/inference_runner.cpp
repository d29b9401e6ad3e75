#include "ui/predictions/inference_runner.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace mrcnn::ui {

InferenceRunner::InferenceRunner(QObject* parent) : QObject(parent) {}

InferenceRunner::~InferenceRunner() {
  if (process_ && process_->state() != QProcess::NotRunning) {
    process_->terminate();
    if (!process_->waitForFinished(3000)) process_->kill();
    process_->waitForFinished(1000);
  }
}

QString InferenceRunner::enginePath() {
  const QString env = qEnvironmentVariable("MRCNN_ENGINE");
  if (!env.isEmpty()) return env;
  return QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("mrcnn-engine"));
}

QStringList InferenceRunner::arguments(const InferenceRequest& r) {
  QStringList args{
      QStringLiteral("--spec"),   r.spec,   QStringLiteral("--task"), QStringLiteral("inference"),
      QStringLiteral("--images"), r.images, QStringLiteral("--out"),  r.out};
  if (!r.checkpoint.isEmpty()) args << QStringLiteral("--checkpoint") << r.checkpoint;
  return args;
}

bool InferenceRunner::isRunning() const {
  return process_ && process_->state() != QProcess::NotRunning;
}

bool InferenceRunner::start(const InferenceRequest& request, QString* error) {
  const auto refuse = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  if (isRunning()) return refuse(tr("an inference is already running"));
  if (request.spec.isEmpty()) return refuse(tr("choose a spec first"));
  if (request.images.isEmpty() || !QFileInfo::exists(request.images))
    return refuse(tr("no such image or folder: %1").arg(request.images));
  const QString engine = enginePath();
  if (!QFileInfo(engine).isExecutable())
    return refuse(tr("cannot run the engine %1 (set MRCNN_ENGINE to its path)").arg(engine));
  request_ = request;
  last_error_line_.clear();
  delete process_;
  process_ = new QProcess(this);
  const auto drain = [this](QProcess::ProcessChannel channel, bool all) {
    process_->setReadChannel(channel);
    while (process_->canReadLine() || (all && process_->bytesAvailable() > 0)) {
      const QString line = QString::fromUtf8(process_->readLine()).trimmed();
      if (line.isEmpty()) continue;
      if (channel == QProcess::StandardError &&
          line.contains(QLatin1String("error"), Qt::CaseInsensitive))
        last_error_line_ = line;
      emit output(line);
    }
  };
  connect(process_, &QProcess::readyReadStandardError, this,
          [drain] { drain(QProcess::StandardError, false); });
  connect(process_, &QProcess::readyReadStandardOutput, this,
          [drain] { drain(QProcess::StandardOutput, false); });
  connect(
      process_, &QProcess::finished, this, [this, drain](int code, QProcess::ExitStatus status) {
        drain(QProcess::StandardError, true);
        drain(QProcess::StandardOutput, true);
        if (status == QProcess::CrashExit) {
          emit finished(false,
                        tr("the engine crashed%1")
                            .arg(last_error_line_.isEmpty() ? QString() : ": " + last_error_line_));
        } else if (code != 0) {
          emit finished(false,
                        tr("the engine exited with code %1%2")
                            .arg(code)
                            .arg(last_error_line_.isEmpty() ? QString() : ": " + last_error_line_));
        } else {
          emit finished(true, QString());
        }
      });
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart)
      emit finished(false, tr("cannot start the engine: %1").arg(process_->errorString()));
  });
  process_->start(engine, arguments(request));
  return true;
}

void InferenceRunner::stop() {
  // SIGTERM: the engine stops gracefully.
  if (isRunning()) process_->terminate();
}

}  // namespace mrcnn::ui

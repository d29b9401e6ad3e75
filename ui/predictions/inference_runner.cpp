#include "ui/predictions/inference_runner.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

#include "specs/events.h"

namespace mrcnn::ui {
namespace {

// A stdout line that is an engine event (specs/events.proto) as a line a person reads, and
// the error it carries (empty if none). Lines that are not events come back unchanged: the
// engine may print plain text too, and results.json stays the contract either way.
struct ReadLine {
  QString text;
  QString error;
  qint64 done = -1, total = -1;  // a progress event's step; total_steps of start or progress
};

ReadLine readStdoutLine(const QString& line) {
  ReadLine r{line, {}};
  if (!line.startsWith(u'{')) return r;
  const QByteArray utf8 = line.toUtf8();
  const auto e = events::parseJsonLine(std::string_view(utf8.constData(), utf8.size()));
  if (!e) return r;
  const auto q = [](const std::string& s) { return QString::fromStdString(s); };
  const QString type = q(e->type());
  if (type == u"start") {
    r.total = static_cast<qint64>(e->total_steps());
    r.text = QObject::tr("start: %1 on %2").arg(q(e->task()), q(e->device()));
  } else if (type == u"progress") {
    r.done = static_cast<qint64>(e->step());
    r.total = static_cast<qint64>(e->total_steps());
    r.text = e->total_steps() > 0
                 ? QObject::tr("progress: %1 / %2").arg(e->step()).arg(e->total_steps())
                 : QObject::tr("progress: %1").arg(e->step());
  } else if (type == u"warning") {
    r.text = QObject::tr("warning [%1]: %2").arg(q(e->code()), q(e->message()));
  } else if (type == u"error") {
    r.error = e->code().empty() ? q(e->message())
                                : QStringLiteral("[%1] %2").arg(q(e->code()), q(e->message()));
    r.text = QObject::tr("error: %1").arg(r.error);
  } else if (type == u"done") {
    r.text = QObject::tr("done: %1%2")
                 .arg(q(e->status()),
                      e->summary().empty() ? QString() : QStringLiteral(" — ") + q(e->summary()));
  } else if (type == u"log") {
    r.text = q(e->text());
  } else {
    r.text = QObject::tr("%1 event").arg(type);
  }
  return r;
}

}  // namespace

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
  if (r.backend != QStringLiteral("libtorch")) args << QStringLiteral("--backend") << r.backend;
  if (r.backend == QStringLiteral("openvino") && !r.onnx.isEmpty())
    args << QStringLiteral("--onnx") << r.onnx;
  if (r.tile > 0) {
    args << QStringLiteral("--tile") << QString::number(r.tile) << QStringLiteral("--tile-overlap")
         << QString::number(r.tile_overlap, 'g', 6);
  }
  if (!r.draft_annotations.isEmpty()) {
    args << QStringLiteral("--out-annotations") << r.draft_annotations
         << QStringLiteral("--overlay-threshold") << QString::number(r.draft_threshold, 'g', 6);
  }
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
  if (request.backend == QStringLiteral("openvino") && !request.onnx.isEmpty() &&
      !QFileInfo(request.onnx).isFile()) {
    return refuse(tr("no such exported model: %1").arg(request.onnx));
  }
  const QString engine = enginePath();
  if (!QFileInfo(engine).isExecutable())
    return refuse(tr("cannot run the engine %1 (set MRCNN_ENGINE to its path)").arg(engine));
  request_ = request;
  last_error_line_.clear();
  error_from_event_ = false;
  total_ = -1;
  delete process_;
  process_ = new QProcess(this);
  const auto drain = [this](QProcess::ProcessChannel channel, bool all) {
    process_->setReadChannel(channel);
    while (process_->canReadLine() || (all && process_->bytesAvailable() > 0)) {
      const QString line = QString::fromUtf8(process_->readLine()).trimmed();
      if (line.isEmpty()) continue;
      if (channel == QProcess::StandardOutput) {
        // An error event is the engine's own word on what went wrong: it wins over stderr.
        const ReadLine read = readStdoutLine(line);
        if (!read.error.isEmpty()) {
          last_error_line_ = read.error;
          error_from_event_ = true;
        }
        if (read.total > 0) total_ = read.total;
        if (read.done >= 0) emit progress(read.done, total_);
        emit output(read.text);
        continue;
      }
      if (!error_from_event_ && line.contains(QLatin1String("error"), Qt::CaseInsensitive))
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

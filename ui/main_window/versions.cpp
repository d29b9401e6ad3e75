#include "ui/main_window/versions.h"

#include <google/protobuf/stubs/common.h>

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QTimer>

namespace mrcnn::ui {

QStringList localVersions() {
  return {QObject::tr("Qt %1 (built with %2)")
              .arg(QString::fromLatin1(qVersion()), QStringLiteral(QT_VERSION_STR)),
          QObject::tr("protobuf %1")
              .arg(QString::fromStdString(
                  google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION)))};
}

QString enginePath() {
  const QString from_env = qEnvironmentVariable("MRCNN_ENGINE");
  if (!from_env.isEmpty()) return from_env;
  return QDir(QCoreApplication::applicationDirPath()).filePath(u"mrcnn-engine"_qs);
}

EngineVersionQuery::EngineVersionQuery(QObject* parent) : QObject(parent) {}

void EngineVersionQuery::start(const QString& engine, int timeout_ms) {
  const auto report = [this](const QStringList& lines, bool ok) {
    if (reported_) return;
    reported_ = true;
    emit done(lines, ok);
  };
  if (!QFileInfo(engine).isExecutable()) {
    report({tr("%1: not found (set MRCNN_ENGINE to the engine binary)").arg(engine)}, false);
    return;
  }
  process_ = new QProcess(this);
  process_->setProcessChannelMode(QProcess::MergedChannels);
  connect(process_, &QProcess::finished, this,
          [this, report, engine](int code, QProcess::ExitStatus status) {
            const QString out = QString::fromUtf8(process_->readAll()).trimmed();
            if (status != QProcess::NormalExit || code != 0) {
              report({tr("%1 --version failed (exit %2): %3").arg(engine).arg(code).arg(out)},
                     false);
              return;
            }
            report(out.split(u'\n', Qt::SkipEmptyParts), true);
          });
  connect(process_, &QProcess::errorOccurred, this, [this, report, engine](QProcess::ProcessError) {
    report({tr("%1: %2").arg(engine, process_->errorString())}, false);
  });
  QTimer::singleShot(timeout_ms, this, [this, report, engine] {
    if (reported_) return;
    process_->kill();
    report({tr("%1 --version did not answer").arg(engine)}, false);
  });
  process_->start(engine, {u"--version"_qs});
}

}  // namespace mrcnn::ui

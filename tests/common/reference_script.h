// Runs a reference script (Python with torchvision and pycocotools: the test oracles) from
// the project's environment, as the parity tests do.
#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>

namespace mrcnn::testing {

// Runs MRCNN_PYTHON on MRCNN_SOURCE_DIR/<script> with `args`. Returns an empty string on
// success, else what went wrong with the script's output; `log` receives that output.
inline QString runReferenceScript(const QString& script, const QStringList& args,
                                  QString* log = nullptr, int timeout_ms = 300000) {
  const QString python = qEnvironmentVariable("MRCNN_PYTHON");
  const QString path = qEnvironmentVariable("MRCNN_SOURCE_DIR") + "/" + script;
  QProcess process;
  process.setProcessChannelMode(QProcess::MergedChannels);
  process.start(python, QStringList{path} + args);
  const bool finished = process.waitForFinished(timeout_ms);
  const QString output = QString::fromUtf8(process.readAll()).trimmed();
  if (log) *log = output;
  if (!finished || process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0) {
    return script + " failed (" + python + " " + path + "): " + output;
  }
  return {};
}

}  // namespace mrcnn::testing

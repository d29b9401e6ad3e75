// The project's programs run as processes by the tests: their output and exit code (the
// launcher, the engine), the build's folders, files written for a test and read back.
#pragma once

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStringList>
#include <QTemporaryDir>
#include <QtGlobal>

namespace mrcnn::testing {

struct Run {
  int code = -1;
  QString out, err;
};

inline QString binDir() {
  return qEnvironmentVariable("MRCNN_BIN_DIR");
}
inline QString sourceDir() {
  return qEnvironmentVariable("MRCNN_SOURCE_DIR");
}

// Runs `program` with `args` to its end, killed after `timeout_ms` ("timed out" in err).
inline Run runProcess(const QString& program, const QStringList& args,
                      const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment(),
                      int timeout_ms = 300000) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(program, args);
  Run r;
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.err = "timed out";
    return r;
  }
  r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

// `mrcnn-engine args...` from the build's bin folder.
inline Run engine(const QStringList& args, int timeout_ms = 300000) {
  return runProcess(binDir() + "/mrcnn-engine", args, QProcessEnvironment::systemEnvironment(),
                    timeout_ms);
}

// A run's exit code and output, for the message of a check that failed.
inline QString explain(const Run& r) {
  return "exit " + QString::number(r.code) + "\n" + r.out + r.err;
}

// `mrcnn-workbench --headless args...` from the build's bin folder.
inline Run headless(const QStringList& args,
                    const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment(),
                    int timeout_ms = 300000) {
  return runProcess(binDir() + "/mrcnn-workbench", QStringList{"--headless"} + args, env,
                    timeout_ms);
}

inline QString writeFile(const QTemporaryDir& dir, const QString& name, const QByteArray& text,
                         bool executable = false) {
  const QString path = dir.filePath(name);
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(path));
  f.write(text);
  f.close();
  if (executable) f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
  return path;
}

// A JSON file's top object; empty when it cannot be read or is not an object.
inline QJsonObject readJsonObject(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

}  // namespace mrcnn::testing

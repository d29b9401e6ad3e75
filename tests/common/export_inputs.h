// The inputs the export tests share (tests/app/export_inputs.sh): torchvision's R50-FPN seeded
// with the photos it runs on, and a shapes run trained 150 steps. ctest's export_inputs fixture
// makes them once for the suite (its folder in MRCNN_EXPORT_INPUTS) and each test links or
// copies them into its own folder; a test run alone has the script make them there.
#pragma once

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>

#include <filesystem>
#include <system_error>

#include "tests/common/process_run.h"

namespace mrcnn::testing {

// Makes `part` (r50, shapes) in the suite's folder, or in `own` without one (the script skips
// what is already made). Returns the folder, or an empty string with `error` set.
inline QString exportInputsDir(const QString& part, const QString& own, QString* error) {
  QString dir = qEnvironmentVariable("MRCNN_EXPORT_INPUTS");
  if (dir.isEmpty()) dir = own;
  const Run r = runProcess("bash", {sourceDir() + "/tests/app/export_inputs.sh", part, dir},
                           QProcessEnvironment::systemEnvironment(), 1800000);
  if (r.code != 0) {
    *error = "tests/app/export_inputs.sh " + part + " " + dir + " failed (exit " +
             QString::number(r.code) + "): " + r.out + r.err;
    return {};
  }
  return dir;
}

// model.pt, model_saturated.pt and images/ in `dir` (links to the suite's). Returns an empty
// string or what went wrong; `made` gets export_parity.py make's JSON line.
inline QString r50Inputs(const QString& dir, QJsonObject* made = nullptr) {
  QString error;
  const QString from = exportInputsDir("r50", dir, &error);
  if (from.isEmpty()) return error;
  if (QDir(from) != QDir(dir)) {
    for (const char* name : {"model.pt", "model_saturated.pt", "images"}) {
      if (!QFile::link(from + "/" + name, dir + "/" + name))
        return QString("cannot link ") + name + " from " + from + " into " + dir;
    }
  }
  if (made) {
    QFile line(from + "/make.json");
    if (!line.open(QIODevice::ReadOnly)) return "no " + line.fileName();
    *made = QJsonDocument::fromJson(line.readAll()).object();
  }
  return {};
}

// The shapes run trained 150 steps (checkpoint model.step-150) at `dir`/shapes_run, a copy of
// the suite's that the test may write into. Returns an empty string or what went wrong.
inline QString shapesRun150(const QString& dir) {
  QString error;
  const QString from = exportInputsDir("shapes", dir, &error);
  if (from.isEmpty()) return error;
  if (QDir(from) == QDir(dir)) return {};
  std::error_code ec;
  std::filesystem::copy((from + "/shapes_run").toStdString(), (dir + "/shapes_run").toStdString(),
                        std::filesystem::copy_options::recursive, ec);
  return ec ? "cannot copy " + from + "/shapes_run: " + QString::fromStdString(ec.message())
            : QString();
}

}  // namespace mrcnn::testing

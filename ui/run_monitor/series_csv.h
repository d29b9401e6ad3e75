// The run monitor's CSV export: one row per run and step, one column per series (empty where
// a series has no value at that step), so a spreadsheet or pandas reads it as is.
#pragma once

#include <QString>
#include <QVector>

class QTextStream;

namespace mrcnn::ui {

class RunModel;

struct NamedRun {
  QString name;
  const RunModel* model = nullptr;
};

// Columns: run, step, then the series of seriesCatalog() that any of the runs has.
void writeSeriesCsv(const QVector<NamedRun>& runs, QTextStream& out);
// Writes to a file; false and *error naming the file when it cannot be written.
bool saveSeriesCsv(const QVector<NamedRun>& runs, const QString& path, QString* error = nullptr);

}  // namespace mrcnn::ui

#include "ui/run_monitor/series_csv.h"

#include <QSaveFile>
#include <QTextStream>
#include <map>

#include "ui/run_monitor/run_model.h"

namespace mrcnn::ui {
namespace {

// RFC 4180 quoting for names that hold commas, quotes or line breaks.
QString csvField(const QString& text) {
  if (!text.contains(QLatin1Char(',')) && !text.contains(QLatin1Char('"')) &&
      !text.contains(QLatin1Char('\n')))
    return text;
  QString quoted = text;
  quoted.replace(QLatin1String("\""), QLatin1String("\"\""));
  return QLatin1Char('"') + quoted + QLatin1Char('"');
}

}  // namespace

void writeSeriesCsv(const QVector<NamedRun>& runs, QTextStream& out) {
  QStringList keys;
  for (const SeriesInfo& info : seriesCatalog()) {
    for (const NamedRun& run : runs) {
      if (run.model && run.model->series(info.key)) {
        keys.append(info.key);
        break;
      }
    }
  }
  out << "run,step";
  for (const QString& key : keys)
    out << ',' << key;
  out << '\n';

  for (const NamedRun& run : runs) {
    if (!run.model) continue;
    // step → one cell per key; std::map keeps the steps in order.
    std::map<double, QVector<QString>> rows;
    for (int k = 0; k < keys.size(); ++k) {
      const Series* s = run.model->series(keys[k]);
      if (!s) continue;
      for (int i = 0; i < s->size(); ++i) {
        auto& row = rows[s->steps[i]];
        if (row.isEmpty()) row.resize(keys.size());
        row[k] = QString::number(s->values[i], 'g', 17);
      }
    }
    const QString name = csvField(run.name);
    for (const auto& [step, cells] : rows) {
      out << name << ',' << QString::number(step, 'g', 17);
      for (const QString& cell : cells)
        out << ',' << cell;
      out << '\n';
    }
  }
}

bool saveSeriesCsv(const QVector<NamedRun>& runs, const QString& path, QString* error) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
    if (error) *error = QStringLiteral("%1: cannot write: %2").arg(path, file.errorString());
    return false;
  }
  QTextStream out(&file);
  writeSeriesCsv(runs, out);
  out.flush();
  if (!file.commit()) {
    if (error) *error = QStringLiteral("%1: cannot write: %2").arg(path, file.errorString());
    return false;
  }
  return true;
}

}  // namespace mrcnn::ui

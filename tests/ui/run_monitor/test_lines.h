// Small helpers of the run monitor's tests: event JSON written with single quotes, files of
// lines.
#pragma once

#include <QFile>
#include <QString>
#include <QStringList>
#include <QtTest>

namespace mrcnn::testing {

// JSON written with single quotes, to keep the tests readable (and moc away from raw strings).
inline QString J(const char* text) {
  return QString::fromUtf8(text).replace('\'', '"');
}

inline void writeLines(const QString& path, const QStringList& lines) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
  for (const QString& l : lines)
    f.write((l + '\n').toUtf8());
}

inline QStringList readLines(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
}

}  // namespace mrcnn::testing

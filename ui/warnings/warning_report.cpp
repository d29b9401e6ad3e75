#include "ui/warnings/warning_report.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>
#include <algorithm>

namespace mrcnn::ui {

namespace {

[[noreturn]] void fail(const QString& path, const QString& where, const QString& what) {
  throw WarningReportError(
      (where.isEmpty() ? QStringLiteral("%1: %3") : QStringLiteral("%1: %2: %3"))
          .arg(path, where, what)
          .toStdString());
}

QJsonDocument readJson(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly))
    fail(path, {}, QStringLiteral("cannot open: ") + file.errorString());
  QJsonParseError error;
  const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &error);
  if (error.error != QJsonParseError::NoError)
    fail(path, QStringLiteral("byte %1").arg(error.offset), error.errorString());
  return doc;
}

std::optional<int64_t> optionalId(const QJsonValue& v, const QString& path, const QString& where) {
  if (v.isNull() || v.isUndefined()) return std::nullopt;
  if (!v.isDouble() || v.toDouble() != static_cast<double>(v.toInteger()))
    fail(path, where, QStringLiteral("expected an integer id or null"));
  return v.toInteger();
}

}  // namespace

QString WarningEntry::key() const {
  return QStringLiteral("%1/%2/%3")
      .arg(kind, image_id ? QString::number(*image_id) : QStringLiteral("-"),
           annotation_id ? QString::number(*annotation_id) : QStringLiteral("-"));
}

WarningReport readWarningReport(const QString& path) {
  WarningReport report;
  report.path = path;
  const QJsonDocument doc = readJson(path);
  if (!doc.isObject())
    fail(
        path, {},
        QStringLiteral("expected a JSON object (a TAO warnings file or a dataset_convert report)"));
  const QJsonObject root = doc.object();
  if (root.contains(QLatin1String("problems"))) {
    const QJsonValue problems = root.value(QLatin1String("problems"));
    if (!problems.isArray())
      fail(path, QStringLiteral("problems"), QStringLiteral("expected an array"));
    const QJsonArray array = problems.toArray();
    for (qsizetype i = 0; i < array.size(); ++i) {
      const QString where = QStringLiteral("problems[%1]").arg(i);
      if (!array[i].isObject()) fail(path, where, QStringLiteral("expected an object"));
      const QJsonObject o = array[i].toObject();
      WarningEntry e;
      e.kind = o.value(QLatin1String("kind")).toString();
      if (e.kind.isEmpty())
        fail(path, where + ".kind", QStringLiteral("expected a non-empty string"));
      e.image_id = optionalId(o.value(QLatin1String("image_id")), path, where + ".image_id");
      e.annotation_id =
          optionalId(o.value(QLatin1String("annotation_id")), path, where + ".annotation_id");
      e.file = o.value(QLatin1String("file")).toString();
      e.message = o.value(QLatin1String("message")).toString();
      report.entries.push_back(std::move(e));
    }
    return report;
  }
  // TAO's file: image ids as keys, in the order written (QJsonObject sorts keys; the ids are
  // sorted numerically instead, which reads better than the string order).
  report.tao_format = true;
  std::vector<std::pair<int64_t, QJsonObject>> images;
  for (auto it = root.begin(); it != root.end(); ++it) {
    bool ok = false;
    const int64_t id = it.key().toLongLong(&ok);
    if (!ok)
      fail(path, it.key(),
           QStringLiteral(
               "expected an image id as the key (TAO's warnings file) or \"problems\" (a report)"));
    if (!it.value().isObject())
      fail(path, it.key(), QStringLiteral("expected {\"box\": [...], \"mask\": [...]}"));
    images.emplace_back(id, it.value().toObject());
  }
  std::sort(images.begin(), images.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [image_id, o] : images) {
    for (const char* kind : {"box", "mask"}) {
      const QJsonValue ids = o.value(QLatin1String(kind));
      if (ids.isUndefined()) continue;
      if (!ids.isArray())
        fail(path, QStringLiteral("%1.%2").arg(image_id).arg(kind),
             QStringLiteral("expected an array of annotation ids"));
      const QJsonArray list = ids.toArray();
      for (qsizetype i = 0; i < list.size(); ++i) {
        WarningEntry e;
        e.kind = QStringLiteral("tao_") + kind;
        e.image_id = image_id;
        e.annotation_id =
            optionalId(list[i], path, QStringLiteral("%1.%2[%3]").arg(image_id).arg(kind).arg(i));
        if (!e.annotation_id)
          fail(path, QStringLiteral("%1.%2[%3]").arg(image_id).arg(kind).arg(i),
               QStringLiteral("expected an annotation id"));
        e.message = kind == std::string_view("box")
                        ? QStringLiteral(
                              "annotation %1: box of zero size or out of its image (left out of "
                              "the records)")
                              .arg(*e.annotation_id)
                        : QStringLiteral("annotation %1: mask reaches out of its box")
                              .arg(*e.annotation_id);
        report.entries.push_back(std::move(e));
      }
    }
  }
  return report;
}

QString kindTitle(const QString& kind) {
  static const QHash<QString, QString> titles = {
      {QStringLiteral("tao_box"), QStringLiteral("Box warning (TAO)")},
      {QStringLiteral("tao_mask"), QStringLiteral("Mask warning (TAO)")},
      {QStringLiteral("image_missing"), QStringLiteral("Image missing")},
      {QStringLiteral("image_unreadable"), QStringLiteral("Image unreadable")},
      {QStringLiteral("image_corrupt"), QStringLiteral("Image corrupt")},
      {QStringLiteral("image_size_mismatch"), QStringLiteral("Image size differs from the json")},
      {QStringLiteral("box_out_of_bounds"), QStringLiteral("Box out of its image")},
      {QStringLiteral("bad_bbox"), QStringLiteral("Box missing or of zero or negative size")},
      {QStringLiteral("mask_outside_box"), QStringLiteral("Mask outside its box")},
      {QStringLiteral("bad_mask"), QStringLiteral("Mask that cannot be used")},
      {QStringLiteral("category_ids_not_from_1"), QStringLiteral("Category ids not from 1")},
  };
  const auto it = titles.constFind(kind);
  if (it != titles.constEnd()) return *it;
  // The reader's snake_case names: "unknown_category_id" -> "Unknown category id".
  QString title = kind;
  title.replace('_', ' ');
  if (!title.isEmpty()) title[0] = title[0].toUpper();
  return title;
}

bool isBoxKind(const QString& kind) {
  return kind == QLatin1String("tao_box") || kind == QLatin1String("box_out_of_bounds") ||
         kind == QLatin1String("bad_bbox");
}

QString reviewedPath(const QString& report) {
  return report + QStringLiteral(".reviewed.json");
}

QSet<QString> readReviewed(const QString& report) {
  QSet<QString> keys;
  const QString path = reviewedPath(report);
  if (!QFileInfo::exists(path)) return keys;
  const QJsonDocument doc = readJson(path);
  for (const QJsonValue& v : doc.object().value(QLatin1String("reviewed")).toArray())
    keys.insert(v.toString());
  return keys;
}

void writeReviewed(const QString& report, const QSet<QString>& keys) {
  QStringList sorted(keys.begin(), keys.end());
  sorted.sort();
  QJsonObject root{{QStringLiteral("report"), QFileInfo(report).fileName()},
                   {QStringLiteral("reviewed"), QJsonArray::fromStringList(sorted)}};
  QSaveFile file(reviewedPath(report));
  const QByteArray bytes = QJsonDocument(root).toJson(QJsonDocument::Indented);
  if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit())
    fail(reviewedPath(report), {}, QStringLiteral("cannot write: ") + file.errorString());
}

}  // namespace mrcnn::ui

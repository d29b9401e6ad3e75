#include "ui/predictions/prediction_results.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>

namespace mrcnn::ui {

namespace {

QJsonDocument readJson(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly))
    throw PredictionError(
        QStringLiteral("%1: cannot open: %2").arg(path, file.errorString()).toStdString());
  QJsonParseError error;
  const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &error);
  if (error.error != QJsonParseError::NoError)
    throw PredictionError(QStringLiteral("%1: byte %2: %3")
                              .arg(path)
                              .arg(error.offset)
                              .arg(error.errorString())
                              .toStdString());
  return doc;
}

[[noreturn]] void fail(const QString& path, qsizetype index, const QString& key,
                       const QString& reason) {
  throw PredictionError(
      QStringLiteral("%1: [%2]%3: %4").arg(path).arg(index).arg(key, reason).toStdString());
}

int64_t integer(const QJsonObject& o, const char* key, const QString& path, qsizetype index) {
  const QJsonValue v = o.value(QLatin1String(key));
  if (!v.isDouble() || v.toDouble() != static_cast<double>(v.toInteger()))
    fail(path, index, QStringLiteral(".") + key, QStringLiteral("expected an integer"));
  return v.toInteger();
}

}  // namespace

PredictionSet readPredictions(const QString& results_json) {
  PredictionSet set;
  set.path = results_json;
  const QJsonDocument doc = readJson(results_json);
  if (!doc.isArray())
    throw PredictionError(
        QStringLiteral("%1: expected a JSON array of detections").arg(results_json).toStdString());
  const QJsonArray array = doc.array();
  QHash<QString, size_t> image_of_key;
  for (qsizetype i = 0; i < array.size(); ++i) {
    if (!array[i].isObject()) fail(results_json, i, {}, QStringLiteral("expected an object"));
    const QJsonObject o = array[i].toObject();
    Prediction p;
    p.image_id = integer(o, "image_id", results_json, i);
    p.category_id = integer(o, "category_id", results_json, i);
    p.file_name = o.value(QLatin1String("file_name")).toString();
    const QJsonValue score = o.value(QLatin1String("score"));
    if (!score.isDouble())
      fail(results_json, i, QStringLiteral(".score"), QStringLiteral("expected a number"));
    p.score = score.toDouble();
    const QJsonArray bbox = o.value(QLatin1String("bbox")).toArray();
    if (bbox.size() != 4)
      fail(results_json, i, QStringLiteral(".bbox"), QStringLiteral("expected 4 numbers"));
    for (qsizetype k = 0; k < 4; ++k)
      if (!bbox[k].isDouble())
        fail(results_json, i, QStringLiteral(".bbox[%1]").arg(k),
             QStringLiteral("expected a number"));
    p.box = QRectF(bbox[0].toDouble(), bbox[1].toDouble(), bbox[2].toDouble(), bbox[3].toDouble());
    if (o.contains(QLatin1String("segmentation"))) {
      const QJsonObject seg = o.value(QLatin1String("segmentation")).toObject();
      const QJsonArray size = seg.value(QLatin1String("size")).toArray();
      const QJsonValue counts = seg.value(QLatin1String("counts"));
      if (size.size() != 2 || !counts.isString() || size[0].toInteger(-1) < 0 ||
          size[1].toInteger(-1) < 0)
        fail(results_json, i, QStringLiteral(".segmentation"),
             QStringLiteral("expected a compressed RLE {\"size\": [h, w], \"counts\": \"...\"}"));
      try {
        p.mask = dataset::fromCompressedString(counts.toString().toStdString(),
                                               static_cast<uint32_t>(size[0].toInteger()),
                                               static_cast<uint32_t>(size[1].toInteger()));
      } catch (const std::invalid_argument& e) {
        fail(results_json, i, QStringLiteral(".segmentation.counts"), QString::fromUtf8(e.what()));
      }
    }
    // Detections are grouped by file when the engine names it (ids may repeat across
    // folders), else by image id.
    const QString key = p.file_name.isEmpty() ? QStringLiteral("#%1").arg(p.image_id) : p.file_name;
    auto it = image_of_key.find(key);
    if (it == image_of_key.end()) {
      it = image_of_key.insert(key, set.images.size());
      set.images.push_back(PredictedImage{p.image_id, p.file_name, {}});
    }
    set.images[*it].predictions.push_back(std::move(p));
    ++set.count;
  }
  const QString categories =
      QFileInfo(results_json).dir().filePath(QStringLiteral("categories.json"));
  if (QFileInfo::exists(categories)) {
    const QJsonDocument cats = readJson(categories);
    for (const QJsonValue& v : cats.array()) {
      const QJsonObject c = v.toObject();
      set.category_names.insert(c.value(QLatin1String("id")).toInteger(),
                                c.value(QLatin1String("name")).toString());
    }
  }
  return set;
}

std::vector<OverlayInstance> predictionInstances(const PredictedImage& image,
                                                 const QHash<qint64, QString>& category_names,
                                                 double threshold) {
  std::vector<OverlayInstance> out;
  for (size_t i = 0; i < image.predictions.size(); ++i) {
    const Prediction& p = image.predictions[i];
    if (p.score < threshold) continue;
    OverlayInstance instance;
    instance.id = static_cast<int64_t>(i);
    instance.category_id = p.category_id;
    instance.box = p.box;
    instance.score = p.score;
    instance.colour = categoryColour(p.category_id);
    const QString name =
        category_names.value(p.category_id, QStringLiteral("[%1]").arg(p.category_id));
    instance.label = QStringLiteral("%1 %2").arg(name).arg(p.score, 0, 'f', 2);
    if (p.mask) {
      try {
        setMask(instance, dataset::decodeMask(*p.mask));
      } catch (const std::invalid_argument&) {
        // Runs that do not add up to the size: the box and label still show.
      }
    }
    out.push_back(std::move(instance));
  }
  return out;
}

std::vector<OverlayInstance> aboveThreshold(const std::vector<OverlayInstance>& all,
                                            double threshold) {
  std::vector<OverlayInstance> out;
  for (const OverlayInstance& i : all)
    if (i.score >= threshold) out.push_back(i);
  return out;
}

}  // namespace mrcnn::ui

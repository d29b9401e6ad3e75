#include "ui/analysis/analysis_data.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <cstdlib>

#include "eval/curves.h"

namespace mrcnn::ui {

const std::array<const char*, kTideTypes> kTideNames = {"Cls",  "Loc", "Both",
                                                        "Dupe", "Bkg", "Miss"};

namespace {

[[noreturn]] void fail(const QString& path, const QString& where, const QString& what) {
  throw AnalysisError(
      (path + u": "_qs + (where.isEmpty() ? QString() : where + u": "_qs) + what).toStdString());
}

QVector<double> numbers(const QJsonValue& v, const QString& path, const QString& where) {
  if (v.isUndefined()) return {};
  if (!v.isArray()) fail(path, where, u"expected an array of numbers"_qs);
  QVector<double> out;
  for (const QJsonValue& x : v.toArray()) {
    if (!x.isDouble()) fail(path, where, u"expected an array of numbers"_qs);
    out.append(x.toDouble());
  }
  return out;
}

double meanCurve(const QVector<double>& curve) {
  if (curve.isEmpty() || curve.front() < 0) return -1;
  double sum = 0;
  for (double p : curve)
    sum += p;
  return sum / curve.size();
}

ClassPoint pointAt(const ClassAnalysis& c, int r) {
  return {c.scores50[r], c.precision50[r], r / 100.0};
}

bool reached(const ClassAnalysis& c, int r) {
  return r >= 0 && r < c.precision50.size() && r < c.scores50.size() && c.precision50[r] > 0;
}

void readConfusion(TypeAnalysis& t, const QJsonObject& c, const QString& path,
                   const QString& where) {
  for (const QJsonValue& id : c[u"categories"_qs].toArray())
    t.confusion_ids.push_back(id.toInteger());
  t.confusion_iou = c[u"iou"_qs].toDouble(0.5);
  t.confusion_score = c[u"score"_qs].toDouble(0.5);
  const int n = t.confusionSize();
  const QJsonArray rows = c[u"matrix"_qs].toArray();
  if (rows.size() != n) fail(path, where + u".matrix"_qs, u"expected %1 rows"_qs.arg(n));
  for (int r = 0; r < n; ++r) {
    const QJsonArray row = rows[r].toArray();
    if (row.size() != n)
      fail(path, where + u".matrix[%1]"_qs.arg(r), u"expected %1 counts"_qs.arg(n));
    for (const QJsonValue& v : row)
      t.confusion.push_back(v.toInteger());
  }
  for (const QJsonValue& entry : c[u"images"_qs].toArray()) {
    const QJsonArray e = entry.toArray();
    const int r = e[0].toInt(-1), col = e[1].toInt(-1);
    if (r < 0 || r >= n || col < 0 || col >= n)
      fail(path, where + u".images"_qs, u"a cell outside the matrix"_qs);
    QList<qint64>& ids = t.cell_images[r * n + col];
    for (const QJsonValue& id : e[2].toArray())
      ids.append(id.toInteger());
  }
}

void readTide(TypeAnalysis& t, const QJsonObject& o) {
  t.has_tide = true;
  t.tide_ap = o[u"ap"_qs].toDouble();
  for (int i = 0; i < kTideTypes; ++i) {
    const QString name = QString::fromLatin1(kTideNames[static_cast<size_t>(i)]);
    t.tide_dap[static_cast<size_t>(i)] = o[u"main"_qs][name].toDouble();
    t.tide_counts[static_cast<size_t>(i)] = o[u"counts"_qs][name].toInteger();
  }
  t.false_positive_dap = o[u"special"_qs][u"FalsePos"_qs].toDouble();
  t.false_negative_dap = o[u"special"_qs][u"FalseNeg"_qs].toDouble();
  for (const QJsonValue& v : o[u"images"_qs].toArray()) {
    ErrorImage image;
    image.image_id = v[u"image_id"_qs].toInteger();
    image.errors = v[u"errors"_qs].toInteger();
    for (int i = 0; i < kTideTypes; ++i)
      image.counts[static_cast<size_t>(i)] =
          v[u"counts"_qs][QString::fromLatin1(kTideNames[static_cast<size_t>(i)])].toInteger();
    t.error_images.push_back(image);
  }
}

TypeAnalysis readType(const QString& type, const QJsonObject& o, const QJsonObject& names,
                      const QString& path) {
  TypeAnalysis t;
  t.type = type;
  const QVector<double> stats = numbers(o[u"stats"_qs], path, type + u".stats"_qs);
  if (stats.size() != 12) fail(path, type + u".stats"_qs, u"expected the 12 COCO numbers"_qs);
  for (int i = 0; i < 12; ++i)
    t.stats[static_cast<size_t>(i)] = stats[i];
  const QJsonObject per_category = o[u"per_category"_qs].toObject();
  for (auto it = per_category.begin(); it != per_category.end(); ++it) {
    bool ok = false;
    ClassAnalysis c;
    c.id = it.key().toLongLong(&ok);
    if (!ok)
      fail(path, type + u".per_category"_qs, u"\"%1\" is not a category id"_qs.arg(it.key()));
    c.name = names[it.key()].toString(u"class %1"_qs.arg(c.id));
    c.ap = it.value().toDouble(-1);
    const QString at = type + u".pr_curves.\""_qs + it.key() + u"\""_qs;
    const QJsonObject curves = o[u"pr_curves"_qs][it.key()].toObject();
    c.precision50 = numbers(curves[u"0.50"_qs], path, at + u".0.50"_qs);
    c.precision75 = numbers(curves[u"0.75"_qs], path, at + u".0.75"_qs);
    c.scores50 = numbers(o[u"pr_scores"_qs][it.key()][u"0.50"_qs], path,
                         type + u".pr_scores.\""_qs + it.key() + u"\""_qs);
    c.ap50 = meanCurve(c.precision50);
    c.ap75 = meanCurve(c.precision75);
    const QJsonValue best = o[u"thresholds"_qs][u"categories"_qs][it.key()];
    if (best.isObject()) {
      c.f1_best = ClassPoint{best[u"score"_qs].toDouble(), best[u"precision"_qs].toDouble(),
                             best[u"recall"_qs].toDouble()};
    }
    t.classes.push_back(std::move(c));
  }
  std::sort(t.classes.begin(), t.classes.end(),
            [](const ClassAnalysis& a, const ClassAnalysis& b) { return a.id < b.id; });
  if (o[u"confusion"_qs].isObject()) {
    readConfusion(t, o[u"confusion"_qs].toObject(), path, type + u".confusion"_qs);
    const int n = t.confusionSize();
    for (ClassAnalysis& c : t.classes) {
      const auto row = std::find(t.confusion_ids.begin(), t.confusion_ids.end(), c.id);
      if (row == t.confusion_ids.end()) continue;
      const int r = static_cast<int>(row - t.confusion_ids.begin());
      for (int col = 0; col < n; ++col)
        c.ground_truth += t.confusionAt(r, col);
    }
  }
  if (o[u"tide"_qs].isObject()) readTide(t, o[u"tide"_qs].toObject());
  return t;
}

}  // namespace

std::optional<ClassPoint> ClassAnalysis::pointAtScore(double score) const {
  const int r = eval::recallIndexAtScore(precision50, scores50, score);
  if (r < 0) return std::nullopt;
  return ClassPoint{score, precision50[r], r / 100.0};
}

std::optional<ClassPoint> ClassAnalysis::pointNearRecall(int r) const {
  const int n = static_cast<int>(std::min(precision50.size(), scores50.size()));
  for (int d = 0; d < n; ++d) {
    if (reached(*this, r - d)) return pointAt(*this, r - d);
    if (reached(*this, r + d)) return pointAt(*this, r + d);
  }
  return std::nullopt;
}

QString TypeAnalysis::rowName(int row) const {
  if (row == confusionSize() - 1) return QObject::tr("background");
  for (const ClassAnalysis& c : classes)
    if (c.id == confusion_ids[static_cast<size_t>(row)]) return c.name;
  return u"class %1"_qs.arg(confusion_ids[static_cast<size_t>(row)]);
}

QString TypeAnalysis::columnName(int column) const {
  return column == confusionSize() - 1 ? QObject::tr("missed") : rowName(column);
}

AnalysisData readAnalysis(const QString& metrics_json) {
  QFile file(metrics_json);
  if (!file.open(QIODevice::ReadOnly)) fail(metrics_json, {}, file.errorString());
  QJsonParseError error;
  const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &error);
  if (error.error != QJsonParseError::NoError)
    fail(metrics_json, u"byte %1"_qs.arg(error.offset), error.errorString());
  if (!doc.isObject()) fail(metrics_json, {}, u"expected a JSON object"_qs);
  const QJsonObject root = doc.object();
  AnalysisData data;
  data.path = metrics_json;
  const QJsonObject names = root[u"category_names"_qs].toObject();
  if (root[u"bbox"_qs].isObject())
    data.bbox = readType(u"bbox"_qs, root[u"bbox"_qs].toObject(), names, metrics_json);
  if (root[u"segm"_qs].isObject())
    data.segm = readType(u"segm"_qs, root[u"segm"_qs].toObject(), names, metrics_json);
  if (!data.bbox && !data.segm)
    fail(metrics_json, {}, u"no \"bbox\" or \"segm\" evaluation (not a metrics file)"_qs);
  data.annotations = root[u"dataset"_qs][u"annotations"_qs].toString();
  data.image_dir = root[u"dataset"_qs][u"images"_qs].toString();
  return data;
}

}  // namespace mrcnn::ui

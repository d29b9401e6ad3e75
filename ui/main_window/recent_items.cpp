#include "ui/main_window/recent_items.h"

#include <QFileInfo>
#include <QSettings>

namespace mrcnn::ui {
namespace {

QString key(RecentItems::Kind kind) {
  switch (kind) {
    case RecentItems::Kind::Spec:
      return u"recent/specs"_qs;
    case RecentItems::Kind::Dataset:
      return u"recent/datasets"_qs;
    case RecentItems::Kind::Run:
      return u"recent/runs"_qs;
  }
  return {};
}

}  // namespace

RecentItems::RecentItems(QObject* parent) : QObject(parent) {}

QString RecentItems::label(Kind kind) {
  switch (kind) {
    case Kind::Spec:
      return tr("Specs");
    case Kind::Dataset:
      return tr("Datasets");
    case Kind::Run:
      return tr("Runs");
  }
  return {};
}

QStringList RecentItems::items(Kind kind) const {
  return QSettings().value(key(kind)).toStringList();
}

void RecentItems::add(Kind kind, const QString& path, const QString& companion) {
  if (path.isEmpty()) return;
  // One spelling per file, so that a file opened twice by different paths is listed once.
  const QString absolute = QFileInfo(path).absoluteFilePath();
  QStringList list = items(kind);
  list.removeAll(absolute);
  list.prepend(absolute);
  list = list.mid(0, kMaxItems);
  QSettings settings;
  QVariantMap companions = settings.value(key(kind) + u"Companions"_qs).toMap();
  if (companion.isEmpty()) {
    companions.remove(absolute);
  } else {
    companions.insert(absolute, companion);
  }
  for (auto it = companions.begin(); it != companions.end();)
    it = list.contains(it.key()) ? std::next(it) : companions.erase(it);
  settings.setValue(key(kind) + u"Companions"_qs, companions);
  store(kind, list);
}

QString RecentItems::companion(Kind kind, const QString& path) const {
  return QSettings().value(key(kind) + u"Companions"_qs).toMap().value(path).toString();
}

void RecentItems::remove(Kind kind, const QString& path) {
  QStringList list = items(kind);
  if (list.removeAll(path) > 0) store(kind, list);
}

void RecentItems::clear(Kind kind) {
  store(kind, {});
}

void RecentItems::store(Kind kind, const QStringList& list) {
  QSettings settings;
  settings.setValue(key(kind), list);
  emit changed(kind);
}

}  // namespace mrcnn::ui

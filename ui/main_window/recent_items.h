// The recently used specs, datasets and runs, most recent first, kept in QSettings so that
// they survive restarts (the File menu's Open Recent and the Recent panel show them).
#pragma once

#include <QObject>
#include <QStringList>

namespace mrcnn::ui {

class RecentItems : public QObject {
  Q_OBJECT

 public:
  enum class Kind { Spec, Dataset, Run };
  static constexpr int kMaxItems = 10;

  explicit RecentItems(QObject* parent = nullptr);

  QStringList items(Kind kind) const;
  // Puts `path` first (once), keeps the kMaxItems most recent, and saves the list.
  // `companion` is kept with it: a dataset's image folder beside its annotations json.
  void add(Kind kind, const QString& path, const QString& companion = {});
  QString companion(Kind kind, const QString& path) const;
  void remove(Kind kind, const QString& path);
  void clear(Kind kind);

  static QString label(Kind kind);  // "Specs", "Datasets", "Runs"

 signals:
  void changed(mrcnn::ui::RecentItems::Kind kind);

 private:
  void store(Kind kind, const QStringList& items);
};

}  // namespace mrcnn::ui

// One file's changes on disk, as an editor of it needs them: told apart from the editor's own
// saves (the bytes it last read or wrote are "known"), followed across the delete-and-rename
// that atomic saves and other editors do, and its deletion and re-creation noticed.
#pragma once

#include <QByteArray>
#include <QFileSystemWatcher>
#include <QObject>
#include <QString>
#include <QTimer>

namespace mrcnn::ui {

class FileWatch : public QObject {
  Q_OBJECT

 public:
  explicit FileWatch(QObject* parent = nullptr);

  // Watches `path` (empty: nothing), whose content is `known` as of now.
  void watch(const QString& path, const QByteArray& known);
  // Compares the file with what is known now (the watcher calls it, shortly after a change).
  void checkNow();

 signals:
  // The file holds other bytes than the known ones (now known).
  void changedOnDisk(const QByteArray& bytes);
  // The file is gone (deleted or moved away).
  void removedFromDisk();

 private:
  void rewatch();

  QFileSystemWatcher watcher_;
  QTimer settle_;  // a save is several events: look once they are over
  QString path_;
  QByteArray known_;
  bool removed_ = false;
};

}  // namespace mrcnn::ui

#include "ui/spec_editor/file_watch.h"

#include <QFile>
#include <QFileInfo>

namespace mrcnn::ui {

namespace {
constexpr int kSettleMs = 150;
}  // namespace

FileWatch::FileWatch(QObject* parent) : QObject(parent) {
  settle_.setSingleShot(true);
  settle_.setInterval(kSettleMs);
  connect(&settle_, &QTimer::timeout, this, &FileWatch::checkNow);
  connect(&watcher_, &QFileSystemWatcher::fileChanged, &settle_, qOverload<>(&QTimer::start));
  connect(&watcher_, &QFileSystemWatcher::directoryChanged, &settle_, qOverload<>(&QTimer::start));
}

void FileWatch::watch(const QString& path, const QByteArray& known) {
  path_ = path;
  known_ = known;
  removed_ = false;
  rewatch();
}

void FileWatch::rewatch() {
  if (!watcher_.files().isEmpty()) watcher_.removePaths(watcher_.files());
  if (!watcher_.directories().isEmpty()) watcher_.removePaths(watcher_.directories());
  if (path_.isEmpty()) return;
  // The folder too: a file replaced by a rename, or deleted and written again, drops out of
  // the file watch; the folder's change brings it back.
  watcher_.addPath(QFileInfo(path_).absolutePath());
  if (QFileInfo::exists(path_)) watcher_.addPath(path_);
}

void FileWatch::checkNow() {
  if (path_.isEmpty()) return;
  QFile file(path_);
  if (!file.exists()) {
    if (!removed_) {
      removed_ = true;
      emit removedFromDisk();
    }
    rewatch();
    return;
  }
  removed_ = false;
  if (!file.open(QIODevice::ReadOnly)) return;  // being written: the next change tells
  const QByteArray bytes = file.readAll();
  rewatch();
  if (bytes == known_) return;  // the editor's own save, or a touch
  known_ = bytes;
  emit changedOnDisk(bytes);
}

}  // namespace mrcnn::ui

// Thumbnails of image files decoded in a thread pool and kept in a bounded cache. A view asks
// for a thumbnail while painting; a miss queues the decode and returns a null image, and
// `ready(path)` tells the view to ask again. The most recently asked paths are decoded first
// (they are the ones on screen).
#pragma once

#include <QCache>
#include <QImage>
#include <QObject>
#include <QSet>
#include <QSize>
#include <QString>
#include <QThreadPool>

namespace mrcnn::ui {

class ThumbnailCache : public QObject {
  Q_OBJECT

 public:
  explicit ThumbnailCache(QSize size = QSize(160, 120), QObject* parent = nullptr);
  ~ThumbnailCache() override;

  QSize size() const { return size_; }
  // The cached thumbnail, or a null image after queueing its decode. A file that cannot be
  // decoded gives a grey placeholder (cached like the others).
  QImage thumbnail(const QString& path);
  bool contains(const QString& path) const { return cache_.contains(path); }
  // Drops queued decodes (e.g. when another dataset is opened); cached images stay.
  void cancelPending();
  int pendingCount() const { return static_cast<int>(pending_.size()); }

  // Decodes a file at most `size` (aspect kept), using the decoder's own downscaling where it
  // has one (JPEG); a null image when it cannot be read.
  static QImage decode(const QString& path, QSize size);
  // The image centred on a transparent canvas of `size`.
  static QImage padded(const QImage& image, QSize size);

 signals:
  void ready(const QString& path);

 private:
  QSize size_;
  QCache<QString, QImage> cache_;
  QSet<QString> pending_;
  int priority_ = 0;  // of the next decode queued
  QThreadPool pool_;
};

}  // namespace mrcnn::ui

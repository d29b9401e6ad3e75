#include "ui/common/thumbnail_cache.h"

#include <QPainter>

#include "ui/common/background.h"
#include "ui/common/image_file.h"

namespace mrcnn::ui {

ThumbnailCache::ThumbnailCache(QSize size, QObject* parent) : QObject(parent), size_(size) {
  // Cost in kilobytes: about 2,000 thumbnails of 160x120.
  cache_.setMaxCost(160 * 1024);
  // Leave a core for the UI and the other views' work.
  pool_.setMaxThreadCount(std::max(1, QThread::idealThreadCount() - 1));
}

ThumbnailCache::~ThumbnailCache() {
  waitForBackground(pool_);
}

QImage ThumbnailCache::decode(const QString& path, QSize size) {
  QImage image = readImageFile(path, size).image;
  if (image.isNull()) return {};
  if (image.width() > size.width() || image.height() > size.height())
    image = image.scaled(size, Qt::KeepAspectRatio, Qt::SmoothTransformation);
  return image.convertToFormat(QImage::Format_RGB32);
}

QImage ThumbnailCache::padded(const QImage& image, QSize size) {
  // Centred on a transparent canvas of the grid's icon size: portrait and landscape
  // thumbnails then line up in rows, their names on one baseline.
  if (image.isNull() || image.size() == size) return image;
  QImage canvas(size, QImage::Format_ARGB32_Premultiplied);
  canvas.fill(Qt::transparent);
  QPainter painter(&canvas);
  painter.drawImage(
      QPoint((size.width() - image.width()) / 2, (size.height() - image.height()) / 2), image);
  painter.end();
  return canvas;
}

QImage ThumbnailCache::thumbnail(const QString& path) {
  if (QImage* hit = cache_.object(path)) return *hit;
  if (pending_.contains(path)) return {};
  pending_.insert(path);
  const QSize size = size_;
  // Later requests first: what the user scrolled to last is what is on screen.
  pool_.start(
      [this, path, size] {
        QImage image = decode(path, size);
        if (image.isNull()) {
          image = QImage(size / 2, QImage::Format_RGB32);
          image.fill(QColor(128, 128, 128));
          QPainter p(&image);
          p.setPen(Qt::white);
          p.drawLine(0, 0, image.width(), image.height());
          p.drawLine(0, image.height(), image.width(), 0);
        }
        QMetaObject::invokeMethod(
            this,
            [this, path, image] {
              pending_.remove(path);
              cache_.insert(path, new QImage(image),
                            std::max<qsizetype>(1, image.sizeInBytes() / 1024));
              emit ready(path);
            },
            Qt::QueuedConnection);
      },
      ++priority_);
  return {};
}

void ThumbnailCache::cancelPending() {
  pool_.clear();
  // Decodes already running still report; those cleared from the queue can be asked again.
  pending_.clear();
}

}  // namespace mrcnn::ui

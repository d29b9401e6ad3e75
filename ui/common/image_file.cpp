#include "ui/common/image_file.h"

#include <QBuffer>
#include <QFile>
#include <QFileInfo>
#include <QImageReader>
#include <span>

#include "dataset/image/decode_image.h"
#include "dataset/image/image_check.h"

namespace mrcnn::ui {

ImageFile readImageFile(const QString& path, QSize fit) {
  ImageFile out;
  const QString name = QFileInfo(path).fileName();
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) {
    out.problem = name + QObject::tr(": cannot read: ") + file.errorString();
    return out;
  }
  QByteArray bytes = file.readAll();
  const std::span<const uint8_t> view(reinterpret_cast<const uint8_t*>(bytes.constData()),
                                      static_cast<size_t>(bytes.size()));
  // The structure and the header's size first, as the engine checks them: a cut file decodes
  // to a picture whose missing part the decoder fills in; a bomb must not be allocated.
  const dataset::ImageCheck structure = dataset::checkStructure(view);
  if (!structure.ok && (bytes.isEmpty() || structure.problem.starts_with("truncated") ||
                        structure.problem.starts_with("image header"))) {
    out.problem = name + ": " + QString::fromStdString(structure.problem);
    return out;
  }
  const uint64_t pixels = uint64_t{structure.header.width} * structure.header.height;
  if (pixels > dataset::kMaxImagePixels) {
    out.problem = name + QObject::tr(
                             ": its header claims %1x%2 pixels, more than the limit of "
                             "%3 megapixels")
                             .arg(structure.header.width)
                             .arg(structure.header.height)
                             .arg(dataset::kMaxImagePixels / 1'000'000);
    return out;
  }
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::ReadOnly);
  QImageReader reader(&buffer);
  reader.setAutoTransform(false);
  // As large as the engine's limit allows (RGB32: 4 bytes a pixel), no larger.
  reader.setAllocationLimit(static_cast<int>(dataset::kMaxImagePixels * 4 / (1024 * 1024)));
  if (fit.isValid()) {
    const QSize full = reader.size();
    if (full.isValid() && !full.isEmpty())
      reader.setScaledSize(full.scaled(fit, Qt::KeepAspectRatio).expandedTo(QSize(1, 1)));
  }
  out.image = reader.read();
  if (out.image.isNull()) {
    out.problem =
        name + ": " +
        (bytes.isEmpty() ? QObject::tr("empty file")
                         : QObject::tr("cannot be decoded (%1)").arg(reader.errorString()));
  }
  return out;
}

ImageFile readImageOrCanvas(const QString& path, QSize canvas) {
  ImageFile file = readImageFile(path);
  if (file.image.isNull()) {
    file.image = QImage(canvas, QImage::Format_RGB32);
    file.image.fill(QColor(96, 96, 96));
  }
  return file;
}

}  // namespace mrcnn::ui

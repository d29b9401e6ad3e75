// Image files as the GUI's views read them (the dataset browser, its thumbnails, predictions,
// the warnings review): the same rules as the engine (dataset/image/decode_image.h). The
// stored pixel grid, EXIF orientation not applied, because the annotations and the engine's
// detections are in that grid; and an empty file, a file that is not an image, a truncated
// JPEG or PNG and a header claiming more pixels than the limit give no picture but a problem
// naming the file, which the view shows while the rest goes on.
#pragma once

#include <QImage>
#include <QSize>
#include <QString>

namespace mrcnn::ui {

struct ImageFile {
  QImage image;     // null when the file cannot be used
  QString problem;  // "<file>: truncated JPEG (no EOI marker)", ...; empty when fine
};

// Reads `path`; with a valid `fit`, decodes it scaled to fit that size (thumbnails: JPEG
// decoders scale while decoding).
ImageFile readImageFile(const QString& path, QSize fit = {});

// For the views that draw annotations over the picture: the file, or when it cannot be used a
// grey canvas of `canvas` pixels in its place (the problem kept), so the overlays still show.
ImageFile readImageOrCanvas(const QString& path, QSize canvas);

}  // namespace mrcnn::ui

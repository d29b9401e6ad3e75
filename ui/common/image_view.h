// An image with instance overlays, zoomed with the wheel (about the cursor) and panned by
// dragging; fits the window until the user zooms. Optionally draws the image's bounds and
// leaves room around them, so that boxes reaching out of the image can be seen.
#pragma once

#include <QGraphicsView>
#include <QImage>
#include <vector>

#include "ui/common/overlay.h"

class QGraphicsPixmapItem;

namespace mrcnn::ui {

class OverlayItem;

class ImageView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit ImageView(QWidget* parent = nullptr);

  void setImage(const QImage& image);
  // Sets the overlay. Fitting shows the image and every box, also those reaching out of it.
  void setInstances(std::vector<OverlayInstance> instances);
  void setLayers(const OverlayLayers& layers);
  // Draws the image's rectangle as a dashed outline (the warning review).
  void setShowImageBounds(bool show);
  // A line of text drawn over the view's top-left corner (file name, counts); empty: none.
  void setCaption(const QString& caption);
  void clear();

  const QImage& image() const { return image_; }
  const std::vector<OverlayInstance>& instances() const;
  const OverlayLayers& layers() const;
  // The visible part of the scene (image and margin) rendered at the image's scale.
  QImage renderScene() const;
  QRectF sceneFrame() const;

  double zoom() const;
  void zoomBy(double factor);
  void fitToWindow();

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void drawForeground(QPainter* painter, const QRectF& rect) override;
  void changeEvent(QEvent* event) override;

 private:
  void updateFrame();
  void applyPalette();

  QImage image_;
  QGraphicsPixmapItem* pixmap_ = nullptr;
  OverlayItem* overlay_ = nullptr;
  QString caption_;
  bool fit_ = true;  // follow the window's size until the user zooms
  bool show_bounds_ = false;
};

}  // namespace mrcnn::ui

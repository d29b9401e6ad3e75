#include "ui/common/image_view.h"

#include <QApplication>
#include <QGraphicsItem>
#include <QGraphicsPixmapItem>
#include <QGraphicsScene>
#include <QPainter>
#include <QStyleOptionGraphicsItem>
#include <QWheelEvent>
#include <cmath>

namespace mrcnn::ui {

// Paints the overlay through paintOverlay, in image coordinates, with line widths and labels
// kept at their screen size whatever the zoom.
class OverlayItem : public QGraphicsItem {
 public:
  QRectF boundingRect() const override { return bounds_; }
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) override {
    const double scale = option->levelOfDetailFromTransform(painter->worldTransform());
    paintOverlay(*painter, instances_, layers_, scale > 0 ? 1.0 / scale : 1.0);
    if (show_bounds_ && !image_rect_.isEmpty()) {
      QPen pen(QApplication::palette().color(QPalette::Highlight), 2, Qt::DashLine);
      pen.setCosmetic(true);
      painter->setPen(pen);
      painter->setBrush(Qt::NoBrush);
      painter->drawRect(image_rect_);
    }
  }

  void set(std::vector<OverlayInstance> instances, const QRectF& image_rect) {
    prepareGeometryChange();
    instances_ = std::move(instances);
    image_rect_ = image_rect;
    bounds_ = image_rect;
    for (const OverlayInstance& i : instances_)
      bounds_ = bounds_.united(i.box.normalized());
    // Room for labels above the top edge and for the pens.
    bounds_.adjust(-40, -40, 40, 40);
    update();
  }
  void setLayers(const OverlayLayers& layers) {
    layers_ = layers;
    update();
  }
  void setShowBounds(bool show) {
    show_bounds_ = show;
    update();
  }
  const std::vector<OverlayInstance>& instances() const { return instances_; }
  const OverlayLayers& layers() const { return layers_; }
  QRectF instancesExtent() const {
    QRectF r = image_rect_;
    for (const OverlayInstance& i : instances_)
      r = r.united(i.box.normalized());
    return r;
  }

 private:
  std::vector<OverlayInstance> instances_;
  OverlayLayers layers_;
  QRectF image_rect_;
  QRectF bounds_;
  bool show_bounds_ = false;
};

ImageView::ImageView(QWidget* parent) : QGraphicsView(parent) {
  setScene(new QGraphicsScene(this));
  pixmap_ = scene()->addPixmap(QPixmap());
  pixmap_->setTransformationMode(Qt::SmoothTransformation);
  overlay_ = new OverlayItem;
  scene()->addItem(overlay_);
  setDragMode(QGraphicsView::ScrollHandDrag);
  // Panning is by dragging; scroll bars would only show the margin kept around the frame.
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setFrameShape(QFrame::NoFrame);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setRenderHint(QPainter::SmoothPixmapTransform);
  setMinimumSize(200, 150);
  applyPalette();
}

void ImageView::applyPalette() {
  // A shade darker than the window in light mode, lighter in dark mode: the image stands out
  // without a hard-coded colour.
  const QColor window = palette().color(QPalette::Window);
  setBackgroundBrush(window.lightnessF() > 0.5 ? window.darker(115) : window.lighter(130));
}

void ImageView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::PaletteChange) applyPalette();
  QGraphicsView::changeEvent(event);
}

void ImageView::setImage(const QImage& image) {
  image_ = image;
  pixmap_->setPixmap(QPixmap::fromImage(image));
  fit_ = true;
  updateFrame();
}

void ImageView::setInstances(std::vector<OverlayInstance> instances) {
  overlay_->set(std::move(instances), QRectF(QPointF(0, 0), QSizeF(image_.size())));
  updateFrame();
}

void ImageView::setLayers(const OverlayLayers& layers) {
  overlay_->setLayers(layers);
}

void ImageView::setShowImageBounds(bool show) {
  show_bounds_ = show;
  overlay_->setShowBounds(show);
}

void ImageView::setCaption(const QString& caption) {
  caption_ = caption;
  viewport()->update();
}

void ImageView::clear() {
  image_ = QImage();
  pixmap_->setPixmap(QPixmap());
  overlay_->set({}, QRectF());
  caption_.clear();
  updateFrame();
}

const std::vector<OverlayInstance>& ImageView::instances() const {
  return overlay_->instances();
}

const OverlayLayers& ImageView::layers() const {
  return overlay_->layers();
}

QRectF ImageView::sceneFrame() const {
  QRectF frame = overlay_->instancesExtent();
  if (show_bounds_ && frame != QRectF(QPointF(0, 0), QSizeF(image_.size())))
    frame.adjust(-10, -10, 10, 10);
  return frame;
}

QImage ImageView::renderScene() const {
  const QRectF frame = sceneFrame();
  QImage out(frame.size().toSize(), QImage::Format_ARGB32_Premultiplied);
  out.fill(backgroundBrush().color());
  QPainter painter(&out);
  scene()->render(&painter, QRectF(QPointF(0, 0), frame.size()), frame);
  return out;
}

void ImageView::updateFrame() {
  const QRectF frame = sceneFrame();
  scene()->setSceneRect(
      frame.adjusted(-frame.width(), -frame.height(), frame.width(), frame.height()));
  if (fit_) fitToWindow();
}

double ImageView::zoom() const {
  return transform().m11();
}

void ImageView::zoomBy(double factor) {
  const double z = zoom() * factor;
  if (z < 0.02 || z > 64) return;
  fit_ = false;
  scale(factor, factor);
}

void ImageView::fitToWindow() {
  fit_ = true;
  const QRectF frame = sceneFrame();
  if (frame.isEmpty()) {
    resetTransform();
    return;
  }
  fitInView(frame, Qt::KeepAspectRatio);
}

void ImageView::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return;
  zoomBy(std::pow(1.25, steps));
  event->accept();
}

void ImageView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  if (fit_) fitToWindow();
}

void ImageView::drawForeground(QPainter* painter, const QRectF& rect) {
  QGraphicsView::drawForeground(painter, rect);
  if (caption_.isEmpty()) return;
  painter->save();
  painter->resetTransform();
  const QFontMetrics metrics(font());
  const QRect box(6, 6, metrics.horizontalAdvance(caption_) + 12, metrics.height() + 6);
  QColor back = palette().color(QPalette::Window);
  back.setAlpha(210);
  painter->fillRect(box, back);
  painter->setPen(palette().color(QPalette::WindowText));
  painter->drawText(box, Qt::AlignCenter, caption_);
  painter->restore();
}

}  // namespace mrcnn::ui

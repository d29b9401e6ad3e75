#include "ui/common/overlay.h"

#include <QFontMetricsF>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

namespace mrcnn::ui {

QColor categoryColour(int64_t category_id) {
  // The golden angle keeps neighbouring ids far apart on the hue circle.
  const double hue = std::fmod(static_cast<double>(category_id) * 137.508, 360.0);
  const int saturation = category_id % 2 ? 210 : 170;
  const int value = category_id % 3 ? 240 : 205;
  return QColor::fromHsv(static_cast<int>(hue), saturation, value);
}

QColor highlightColour() {
  return QColor(255, 32, 32);
}

void setMask(OverlayInstance& instance, const cv::Mat& mask01) {
  instance.mask = QImage();
  instance.outline.clear();
  if (mask01.empty()) return;
  const cv::Rect extent = cv::boundingRect(mask01);
  if (extent.area() == 0) return;
  const QColor c = instance.colour.isValid() ? instance.colour : QColor(Qt::white);
  const QRgb full = qPremultiply(c.rgba());
  QColor faint = c;
  faint.setAlphaF(c.alphaF() * 0.25f);
  const QRgb light = qPremultiply(faint.rgba());
  QImage image(extent.width, extent.height, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::transparent);
  for (int y = 0; y < extent.height; ++y) {
    const uint8_t* src = mask01.ptr<uint8_t>(extent.y + y) + extent.x;
    auto* dst = reinterpret_cast<QRgb*>(image.scanLine(y));
    for (int x = 0; x < extent.width; ++x) {
      if (!src[x]) continue;
      // Stripes 4 pixels wide along the anti-diagonal, in image coordinates so that
      // neighbouring crowd regions line up.
      const bool stripe = ((extent.x + x + extent.y + y) / 4) % 2 == 0;
      dst[x] = !instance.crowd || stripe ? full : light;
    }
  }
  instance.mask = std::move(image);
  instance.mask_origin = QPoint(extent.x, extent.y);

  std::vector<std::vector<cv::Point>> contours;
  cv::Mat copy = mask01(extent).clone();
  cv::findContours(copy, contours, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_SIMPLE,
                   cv::Point(extent.x, extent.y));
  for (const auto& contour : contours) {
    QPolygonF polygon;
    polygon.reserve(static_cast<qsizetype>(contour.size()));
    // Contour points are the mask's edge pixels; an aliased 1-pixel pen at integer
    // coordinates paints exactly those pixels (at +0.5 it rounds onto the pixel outside).
    for (const cv::Point& p : contour)
      polygon << QPointF(p.x, p.y);
    instance.outline.push_back(std::move(polygon));
  }
}

namespace {

bool visible(const OverlayInstance& instance, const OverlayLayers& layers) {
  return !instance.crowd || layers.crowd;
}

QPen cosmeticPen(const QColor& colour, double width, Qt::PenStyle style = Qt::SolidLine) {
  QPen pen(colour, width, style);
  pen.setCosmetic(true);
  pen.setJoinStyle(Qt::MiterJoin);
  return pen;
}

void paintLabel(QPainter& painter, const OverlayInstance& instance, double pixel) {
  if (instance.label.isEmpty()) return;
  QFont font = painter.font();
  font.setPixelSize(12);
  const QFontMetricsF metrics(font);
  const double pad = 2;
  const QSizeF text(metrics.horizontalAdvance(instance.label) + 2 * pad, metrics.height());
  // Above the box when there is room, else inside its top edge; in screen units, scaled
  // back to image units so the label keeps its size at any zoom.
  painter.save();
  painter.translate(instance.box.topLeft());
  painter.scale(pixel, pixel);
  const double y = instance.box.top() / pixel >= text.height() ? -text.height() : 0;
  const QRectF rect(QPointF(0, y), text);
  const QColor background = instance.highlight ? highlightColour() : instance.colour;
  painter.fillRect(rect, background);
  painter.setFont(font);
  painter.setPen(background.lightnessF() > 0.55 ? Qt::black : Qt::white);
  painter.drawText(rect.adjusted(pad, 0, -pad, 0), Qt::AlignVCenter | Qt::AlignLeft,
                   instance.label);
  painter.restore();
}

}  // namespace

void paintOverlay(QPainter& painter, std::span<const OverlayInstance> instances,
                  const OverlayLayers& layers, double pixel) {
  painter.save();
  painter.setRenderHint(QPainter::Antialiasing, false);
  if (layers.masks) {
    painter.setOpacity(std::clamp(layers.mask_opacity, 0.0, 1.0));
    for (const OverlayInstance& instance : instances) {
      if (!visible(instance, layers) || instance.mask.isNull() || instance.highlight) continue;
      painter.drawImage(instance.mask_origin, instance.mask);
    }
    painter.setOpacity(1.0);
    for (const OverlayInstance& instance : instances) {
      if (!visible(instance, layers) || instance.highlight) continue;
      painter.setPen(cosmeticPen(instance.colour, 1));
      for (const QPolygonF& polygon : instance.outline)
        painter.drawPolygon(polygon);
    }
  }
  if (layers.boxes) {
    painter.setBrush(Qt::NoBrush);
    for (const OverlayInstance& instance : instances) {
      if (!visible(instance, layers) || instance.highlight) continue;
      painter.setPen(
          cosmeticPen(instance.colour, 2, instance.crowd ? Qt::DashLine : Qt::SolidLine));
      painter.drawRect(instance.box);
    }
  }
  if (layers.labels) {
    for (const OverlayInstance& instance : instances)
      if (visible(instance, layers) && !instance.highlight) paintLabel(painter, instance, pixel);
  }
  // Highlighted instances last, always shown whatever the layers: they are what the user
  // asked to see.
  for (const OverlayInstance& instance : instances) {
    if (!instance.highlight) continue;
    if (!instance.mask.isNull()) {
      painter.setOpacity(std::max(0.6, layers.mask_opacity));
      painter.drawImage(instance.mask_origin, instance.mask);
      painter.setOpacity(1.0);
      painter.setPen(cosmeticPen(Qt::white, 3));
      for (const QPolygonF& polygon : instance.outline)
        painter.drawPolygon(polygon);
    }
    painter.setBrush(Qt::NoBrush);
    painter.setPen(cosmeticPen(Qt::white, 5));
    painter.drawRect(instance.box);
    painter.setPen(cosmeticPen(highlightColour(), 3));
    painter.drawRect(instance.box);
    paintLabel(painter, instance, pixel);
  }
  painter.restore();
}

QImage renderOverlay(const QImage& image, std::span<const OverlayInstance> instances,
                     const OverlayLayers& layers) {
  QImage out = image.convertToFormat(QImage::Format_ARGB32_Premultiplied);
  QPainter painter(&out);
  paintOverlay(painter, instances, layers);
  painter.end();
  return out;
}

}  // namespace mrcnn::ui

// Instance overlays drawn over an image: masks tinted in their category's colour, boxes,
// labels, crowd regions hatched, and a highlighted instance for the warning review. Shared by
// the dataset browser, the prediction view and the warning review; plain data and a painter
// function, so the drawing is tested without widgets.
#pragma once

#include <QColor>
#include <QImage>
#include <QPainter>
#include <QPolygonF>
#include <QRectF>
#include <QString>
#include <QVector>
#include <cstdint>
#include <opencv2/core/mat.hpp>
#include <span>
#include <vector>

namespace mrcnn::ui {

// A colour per category id, stable across runs and views (ground truth and predictions of
// the same category share it): hues spread by the golden angle.
QColor categoryColour(int64_t category_id);

// One instance in image pixel coordinates.
struct OverlayInstance {
  int64_t id = 0;  // annotation id, or the detection's position
  int64_t category_id = 0;
  QRectF box;          // x, y, w, h as COCO gives it
  QImage mask;         // tinted ARGB32 premultiplied, cropped to the mask's extent; may be null
  QPoint mask_origin;  // where mask's top-left pixel lies in the image
  QVector<QPolygonF> outline;  // the mask's contours, image coordinates
  QColor colour;
  QString label;
  bool crowd = false;
  bool highlight = false;  // drawn on top with a thick contrasting outline
  double score = -1;       // a prediction's score; -1 for ground truth
};

struct OverlayLayers {
  bool masks = true;
  bool boxes = true;
  bool labels = true;
  bool crowd = true;  // crowd regions (masks and boxes); off hides them altogether
  double mask_opacity = 0.5;
};

// The colour highlighted instances are drawn in (a saturated red with a white halo, readable
// on photos in light and dark palettes alike).
QColor highlightColour();

// Turns a 0/1 CV_8UC1 mask into the tinted, cropped image OverlayInstance holds. Crowd regions
// are hatched: diagonal stripes at full and at a quarter of the colour's alpha. Fills the
// instance's mask, mask_origin and outline; an empty mask leaves them empty.
void setMask(OverlayInstance& instance, const cv::Mat& mask01);

// Paints the instances in image coordinates onto `painter` (whatever its transform).
// `pixel` is the size of one screen pixel in image units, so lines and labels keep their
// on-screen size at any zoom (1 when painting at the image's own scale).
void paintOverlay(QPainter& painter, std::span<const OverlayInstance> instances,
                  const OverlayLayers& layers, double pixel = 1.0);

// The image with the instances painted over it, at the image's scale.
QImage renderOverlay(const QImage& image, std::span<const OverlayInstance> instances,
                     const OverlayLayers& layers);

}  // namespace mrcnn::ui

#include "ui/common/annotation_overlay.h"

#include "dataset/coco/coco.h"
#include "ui/common/coco_overlay.h"

namespace mrcnn::ui {

OverlayInstance annotationOverlay(const review::Annotation& a, const dataset::CocoDataset& coco,
                                  uint32_t h, uint32_t w, bool highlight) {
  OverlayInstance i;
  i.id = a.id;
  i.category_id = a.category_id;
  i.box = QRectF(a.bbox[0], a.bbox[1], a.bbox[2], a.bbox[3]);
  i.colour = highlight ? highlightColour() : categoryColour(a.category_id);
  i.label = categoryName(coco, a.category_id);
  i.crowd = a.iscrowd;
  i.highlight = highlight;
  cv::Mat mask;
  if (a.rle && a.rle->h == h && a.rle->w == w) {
    mask = dataset::decodeMask(*a.rle);
  } else if (!a.polygons.empty()) {
    mask = dataset::decodeMask(dataset::rleFromPolygons(a.polygons, h, w));
  }
  if (!mask.empty()) setMask(i, mask);
  return i;
}

}  // namespace mrcnn::ui

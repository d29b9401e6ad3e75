#include "ui/common/coco_overlay.h"

#include <QDir>
#include <stdexcept>

#include "dataset/mask/rle.h"

namespace mrcnn::ui {

QString categoryName(const dataset::CocoDataset& coco, int64_t category_id) {
  const uint32_t label = coco.label(category_id);
  if (label == 0) return QStringLiteral("[%1]").arg(category_id);
  return QString::fromStdString(coco.categories()[label - 1].name);
}

std::vector<OverlayInstance> groundTruthInstances(const dataset::CocoDataset& coco,
                                                  uint32_t image_index, int64_t highlight) {
  std::vector<OverlayInstance> out;
  for (uint32_t index : coco.annotationsOfImage(image_index)) {
    const dataset::CocoAnnotation& a = coco.annotations()[index];
    OverlayInstance instance;
    instance.id = a.id;
    instance.category_id = a.category_id;
    instance.box = QRectF(a.bbox[0], a.bbox[1], a.bbox[2], a.bbox[3]);
    instance.crowd = a.iscrowd;
    instance.highlight = a.id == highlight;
    instance.colour = instance.highlight ? highlightColour() : categoryColour(a.category_id);
    instance.label =
        categoryName(coco, a.category_id) + (a.iscrowd ? QStringLiteral(" (crowd)") : QString());
    try {
      setMask(instance, dataset::decodeMask(dataset::annotationRle(coco, a)));
    } catch (const std::invalid_argument&) {
      // A corrupt RLE: the box and label are still worth showing (the warning review lists
      // the annotation).
    }
    out.push_back(std::move(instance));
  }
  return out;
}

QString imagePath(const QString& image_dir, const dataset::CocoImage& image) {
  return QDir(image_dir).filePath(
      QString::fromUtf8(image.file_name.data(), static_cast<qsizetype>(image.file_name.size())));
}

}  // namespace mrcnn::ui

#include "ui/dataset_browser/image_list_model.h"

#include <QFileInfo>
#include <algorithm>

#include "ui/common/coco_overlay.h"
#include "ui/common/thumbnail_cache.h"

namespace mrcnn::ui {

std::shared_ptr<const BrowsedDataset> BrowsedDataset::make(
    dataset::CocoDataset coco, QString annotations, QString image_dir,
    const dataset::AnchorCoverageOptions& anchors, QString anchors_source) {
  auto d = std::make_shared<BrowsedDataset>();
  d->anchors_source = anchors_source.isEmpty()
                          ? QObject::tr("the default anchors (TAO's, 832×1344 canvas)")
                          : std::move(anchors_source);
  d->coco = std::move(coco);
  d->annotations = std::move(annotations);
  d->image_dir = std::move(image_dir);
  const auto images = d->coco.images();
  d->image_categories.resize(images.size());
  d->category_image_counts.assign(d->coco.categories().size(), 0);
  for (uint32_t i = 0; i < images.size(); ++i) {
    std::vector<int64_t>& cats = d->image_categories[i];
    for (uint32_t a : d->coco.annotationsOfImage(i))
      cats.push_back(d->coco.annotations()[a].category_id);
    std::sort(cats.begin(), cats.end());
    cats.erase(std::unique(cats.begin(), cats.end()), cats.end());
    for (int64_t c : cats)
      if (const uint32_t label = d->coco.label(c)) ++d->category_image_counts[label - 1];
  }
  d->stats = dataset::datasetStats({{QFileInfo(d->annotations).fileName().toStdString(),
                                     d->annotations.toStdString(), &d->coco}},
                                   anchors);
  return d;
}

ImageListModel::ImageListModel(ThumbnailCache* thumbnails, QObject* parent)
    : QAbstractListModel(parent), thumbnails_(thumbnails) {
  connect(thumbnails_, &ThumbnailCache::ready, this, &ImageListModel::thumbnailReady);
}

void ImageListModel::setDataset(std::shared_ptr<const BrowsedDataset> dataset) {
  dataset_ = std::move(dataset);
  category_ = -1;
  text_.clear();
  rebuild();
}

void ImageListModel::setFilter(int64_t category_id, const QString& text) {
  category_ = category_id;
  text_ = text.trimmed();
  rebuild();
}

void ImageListModel::rebuild() {
  beginResetModel();
  rows_.clear();
  row_of_path_.clear();
  if (dataset_) {
    bool digits = !text_.isEmpty();
    for (QChar c : text_)
      digits = digits && c.isDigit();
    const int64_t id = digits ? text_.toLongLong() : -1;
    const QByteArray needle = text_.toUtf8().toLower();
    const auto images = dataset_->coco.images();
    for (uint32_t i = 0; i < images.size(); ++i) {
      if (category_ >= 0 && !std::binary_search(dataset_->image_categories[i].begin(),
                                                dataset_->image_categories[i].end(), category_))
        continue;
      if (!text_.isEmpty()) {
        const QByteArray name = QByteArray(images[i].file_name.data(),
                                           static_cast<qsizetype>(images[i].file_name.size()))
                                    .toLower();
        if (images[i].id != id && !name.contains(needle)) continue;
      }
      row_of_path_.insert(imagePath(dataset_->image_dir, images[i]),
                          static_cast<int>(rows_.size()));
      rows_.push_back(i);
    }
  }
  endResetModel();
}

int ImageListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

QVariant ImageListModel::data(const QModelIndex& index, int role) const {
  if (!dataset_ || !index.isValid() || index.row() >= rowCount()) return {};
  const uint32_t i = rows_[static_cast<size_t>(index.row())];
  const dataset::CocoImage& image = dataset_->coco.images()[i];
  switch (role) {
    case Qt::DisplayRole:
      return QString::fromUtf8(image.file_name.data(),
                               static_cast<qsizetype>(image.file_name.size()));
    case ThumbnailRole:
      return thumbnails_->thumbnail(imagePath(dataset_->image_dir, image));
    case Qt::DecorationRole: {
      const QImage thumb = thumbnails_->thumbnail(imagePath(dataset_->image_dir, image));
      if (!thumb.isNull()) return ThumbnailCache::padded(thumb, thumbnails_->size());
      // An empty icon of the full size until the thumbnail arrives: the grid's item size
      // (uniform, taken from one item) must not depend on which thumbnails were ready.
      QImage empty(thumbnails_->size(), QImage::Format_ARGB32_Premultiplied);
      empty.fill(Qt::transparent);
      return empty;
    }
    case Qt::ToolTipRole:
      return QStringLiteral("id %1, %2 x %3, %4 annotations")
          .arg(image.id)
          .arg(image.width)
          .arg(image.height)
          .arg(dataset_->coco.annotationsOfImage(i).size());
    case ImageIdRole:
      return QVariant::fromValue<qint64>(image.id);
    case ImageIndexRole:
      return QVariant::fromValue<uint>(i);
    case PathRole:
      return imagePath(dataset_->image_dir, image);
    default:
      return {};
  }
}

int ImageListModel::rowOfImageId(int64_t image_id) const {
  if (!dataset_) return -1;
  const auto index = dataset_->coco.imageIndex(image_id);
  if (!index) return -1;
  const auto it = std::find(rows_.begin(), rows_.end(), *index);
  return it == rows_.end() ? -1 : static_cast<int>(it - rows_.begin());
}

void ImageListModel::thumbnailReady(const QString& path) {
  for (auto it = row_of_path_.constFind(path); it != row_of_path_.constEnd() && it.key() == path;
       ++it) {
    const QModelIndex i = index(*it);
    emit dataChanged(i, i, {Qt::DecorationRole});
  }
}

}  // namespace mrcnn::ui

// The dataset browser's thumbnail grid model: the images of a COCO dataset, filtered by
// category, image id or file name, with thumbnails from a ThumbnailCache. Filtering works on
// an index precomputed when the dataset loads (the categories of each image), so narrowing
// 100,000 images is a scan of small vectors, no json.
#pragma once

#include <QAbstractListModel>
#include <QHash>
#include <QString>
#include <cstdint>
#include <memory>
#include <vector>

#include "dataset/coco/coco.h"
#include "dataset/stats/dataset_stats.h"

namespace mrcnn::ui {

class ThumbnailCache;

// A loaded dataset and what the views need beside it; immutable once built, shared between
// the UI thread and workers.
struct BrowsedDataset {
  dataset::CocoDataset coco;
  QString annotations;  // the json's path
  QString image_dir;
  // Per image (index into coco.images()): the category ids of its annotations, sorted, unique.
  std::vector<std::vector<int64_t>> image_categories;
  // Per category (index into coco.categories()): how many images hold it.
  std::vector<uint32_t> category_image_counts;
  // The dataset check of the file: what the Statistics tab shows. Its anchor coverage is for
  // the anchors `anchors_source` names (the default ones, or a spec's).
  dataset::DatasetStats stats;
  QString anchors_source;

  // Builds the indexes and runs the check with `anchors`; call from a worker.
  static std::shared_ptr<const BrowsedDataset> make(
      dataset::CocoDataset coco, QString annotations, QString image_dir,
      const dataset::AnchorCoverageOptions& anchors = {}, QString anchors_source = {});
};

class ImageListModel : public QAbstractListModel {
  Q_OBJECT

 public:
  // ThumbnailRole: the decoded thumbnail itself (DecorationRole pads it to the icon size).
  enum Role { ImageIdRole = Qt::UserRole + 1, ImageIndexRole, PathRole, ThumbnailRole };

  explicit ImageListModel(ThumbnailCache* thumbnails, QObject* parent = nullptr);

  void setDataset(std::shared_ptr<const BrowsedDataset> dataset);
  const std::shared_ptr<const BrowsedDataset>& dataset() const { return dataset_; }

  // -1: every category. Text: an image id (all digits) or a part of the file name (any case);
  // empty: everything.
  void setFilter(int64_t category_id, const QString& text);
  int64_t categoryFilter() const { return category_; }
  QString textFilter() const { return text_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;

  // The image index (into coco.images()) shown at a row; the row of an image id, or -1.
  uint32_t imageIndexAt(int row) const { return rows_[static_cast<size_t>(row)]; }
  int rowOfImageId(int64_t image_id) const;

 private:
  void rebuild();
  void thumbnailReady(const QString& path);

  ThumbnailCache* thumbnails_;
  std::shared_ptr<const BrowsedDataset> dataset_;
  int64_t category_ = -1;
  QString text_;
  std::vector<uint32_t> rows_;            // image indexes passing the filter, in file order
  QMultiHash<QString, int> row_of_path_;  // an image file may serve several ids
};

}  // namespace mrcnn::ui

// The warning review: the warnings of a converted dataset (TAO's `<tag>_warnings.json` or our
// `<tag>_report.json`) listed by kind and image; selecting one shows its image with the
// annotation at fault highlighted against the image's bounds and the other annotations.
// Entries are marked reviewed (kept in `<report>.reviewed.json` beside the report), annotations
// chosen to be dropped or their boxes clipped, and a corrected copy of the annotation file
// written to a new path: never over the original.
#pragma once

#include <QSet>
#include <QThreadPool>
#include <QWidget>
#include <memory>

#include "ui/warnings/corrected_copy.h"
#include "ui/warnings/warning_report.h"

class QLabel;
class QPushButton;
class QTreeWidget;
class QTreeWidgetItem;

namespace mrcnn::dataset {
class CocoDataset;
}

namespace mrcnn::ui {

class ImageView;
class LayerControls;

class WarningReview : public QWidget {
  Q_OBJECT

 public:
  enum class Fix { None, Drop, Clip };

  explicit WarningReview(QWidget* parent = nullptr);
  ~WarningReview() override;

  const WarningReport& report() const { return report_; }
  QString annotationsPath() const { return annotations_; }
  QTreeWidget* tree() const { return tree_; }
  ImageView* imageView() const { return view_; }
  QString statusText() const;
  LayerControls* layerControls() const { return layers_; }

  // Shows an entry (index into report().entries); the image loads off the UI thread and
  // entryShown follows.
  bool selectEntry(int index);
  int selectedEntry() const { return selected_; }

  bool isReviewed(int index) const;
  // Saved at once to the reviewed file beside the report.
  void setReviewed(int index, bool reviewed);

  // The fix chosen for the entry's annotation (entries of one annotation share it).
  Fix fix(int index) const;
  void setFix(int index, Fix fix);
  const AnnotationCorrections& corrections() const { return corrections_; }

  // Writes the corrected copy; false with the reason in `message` (also on the status line).
  bool exportCorrected(const QString& output, QString* message = nullptr);

 public slots:
  void openReport(const QString& warningsOrReportJson, const QString& annotationsJson,
                  const QString& imageDir);
  void chooseReport();
  void chooseExport();

 signals:
  void reportLoaded(bool ok, const QString& message);
  void entryShown(int index);

 private:
  void fillTree();
  void updateItem(int index);
  void updateButtons();
  void showEntry(int index);
  void updateStatus();

  QThreadPool pool_;
  QTreeWidget* tree_;
  ImageView* view_;
  LayerControls* layers_;
  QLabel* details_;
  QLabel* status_;
  QPushButton* reviewed_button_;
  QPushButton* drop_button_;
  QPushButton* clip_button_;
  QPushButton* export_button_;

  WarningReport report_;
  QString annotations_;
  QString image_dir_;
  QString annotations_error_;  // the annotation file could not be read: no images
  std::shared_ptr<const dataset::CocoDataset> coco_;
  std::shared_ptr<const RawIndex> raw_;
  QSet<QString> reviewed_;
  AnnotationCorrections corrections_;
  std::vector<QTreeWidgetItem*> items_;  // per entry
  int selected_ = -1;
  uint64_t load_generation_ = 0;
  uint64_t image_generation_ = 0;
};

}  // namespace mrcnn::ui

// The label review: the likely label mistakes of a label_check (mistakes.json) walked down in
// score order. The list (rank, score, kind, image, annotation, decision) filters by kind and
// by class; the image shows the annotations as they now stand with the finding's annotation
// highlighted and the suggestion drawn beside it. Accept (A) applies the suggestion (add the
// missing instance, change the class, take the model's box and mask, delete the spurious or
// duplicate annotation), Reject (R) marks it reviewed, Skip (S) moves on. Every edit and
// decision goes to the annotations' journal as it is made (review/annotation_set.h), so the
// review resumes where it stopped; Save writes the corrected copy beside the original, and
// Use in Spec points the spec being edited at it. Edit (E) opens the image in the annotation
// editor (ui/annotation_editor) for changes of any kind, journalled the same way.
#pragma once

#include <QThreadPool>
#include <QWidget>
#include <memory>
#include <optional>

#include "review/annotation_set.h"
#include "review/mistakes_json.h"

class QComboBox;
class QLabel;
class QPushButton;
class QStackedWidget;
class QTreeWidget;

namespace mrcnn::dataset {
class CocoDataset;
}

namespace mrcnn::ui {

class AnnotationEditor;
class ImageView;

class LabelReview : public QWidget {
  Q_OBJECT

 public:
  explicit LabelReview(QWidget* parent = nullptr);
  ~LabelReview() override;

  // Opens a mistakes.json: the annotation file it names (its journal replayed) and the images
  // under `image_dir` (empty: the folder mistakes.json names). False with the reason in
  // `error` (also on the status line) when something cannot be read; the view is unchanged.
  bool openMistakes(const QString& mistakes_json, const QString& image_dir = {},
                    QString* error = nullptr);

  QTreeWidget* list() const { return list_; }
  ImageView* imageView() const { return view_; }
  AnnotationEditor* editor() const { return editor_; }
  // Edit mode: the current image's annotations in the editor (any change, not only the
  // suggestions); off: back to the review's view of them.
  void setEditing(bool on);
  bool editing() const;
  QComboBox* kindFilter() const { return kind_filter_; }
  QComboBox* classFilter() const { return class_filter_; }
  QString statusText() const;
  QPushButton* useInSpecButton() const { return use_; }
  const review::AnnotationSet* annotations() const { return annotations_.get(); }
  const review::MistakesFile& mistakes() const { return mistakes_; }

  // The finding shown (an index into mistakes().mistakes), -1 when none.
  int current() const { return current_; }
  bool select(int index);
  // The finding's key in the journal's decisions: "image:annotation-or-box:kind".
  static std::string key(const review::Mistake& m);
  std::optional<review::Decision> decision(int index) const;

  // On the current finding; each then moves to the next finding without a decision.
  // Accept applies the suggestion first; false (nothing decided) when it cannot apply, with
  // the reason on the status line.
  bool accept();
  void reject();
  void skip();
  // Writes the corrected copy (<annotations>.reviewed.json); its path, or empty with `error`.
  QString saveReviewed(QString* error = nullptr);

 public slots:
  void chooseMistakes();

 signals:
  void imageShown(int index);
  void opened(const QString& mistakes_json);
  // "Use in Spec" after a save: the spec should train on `reviewed` instead of `original`.
  void useInSpec(const QString& original, const QString& reviewed);

 private:
  void fillList();
  void updateItem(int index);
  void showFinding(int index);
  void decide(review::Decision d);
  void next();
  bool applySuggestion(const review::Mistake& m, QString* why);
  void setStatus(const QString& text);

  review::MistakesFile mistakes_;
  std::unique_ptr<review::AnnotationSet> annotations_;
  std::shared_ptr<const dataset::CocoDataset> coco_;
  QString image_dir_;
  int current_ = -1;
  uint64_t image_generation_ = 0;

  QTreeWidget* list_;
  ImageView* view_;
  QComboBox* kind_filter_;
  QComboBox* class_filter_;
  QLabel* detail_;
  QLabel* status_;
  QPushButton* accept_;
  QPushButton* reject_;
  QPushButton* skip_;
  QPushButton* save_;
  QPushButton* use_;
  QPushButton* edit_;
  QComboBox* edit_class_;
  QStackedWidget* stack_;
  AnnotationEditor* editor_;
  QString saved_;  // the reviewed copy last written
  QThreadPool pool_;
};

}  // namespace mrcnn::ui

#include "ui/label_review/label_review.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QShortcut>
#include <QSplitter>
#include <QStackedWidget>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <cmath>
#include <set>

#include "dataset/coco/coco.h"
#include "dataset/mask/mask_polygons.h"
#include "ui/annotation_editor/annotation_editor.h"
#include "ui/common/annotation_overlay.h"
#include "ui/common/background.h"
#include "ui/common/coco_overlay.h"
#include "ui/common/image_file.h"
#include "ui/common/image_view.h"
#include "ui/common/overlay.h"

namespace mrcnn::ui {
namespace {

using review::Annotation;
using review::Decision;
using review::Mistake;
using review::MistakeKind;

enum Column { kRank, kScore, kKind, kImage, kAnnotation, kDecision, kDetail };

QString kindTitle(MistakeKind k) {
  switch (k) {
    case MistakeKind::kMissing:
      return QObject::tr("missing");
    case MistakeKind::kWrongClass:
      return QObject::tr("wrong class");
    case MistakeKind::kLocalization:
      return QObject::tr("localization");
    case MistakeKind::kSpurious:
      return QObject::tr("spurious");
    case MistakeKind::kDuplicate:
      return QObject::tr("duplicate");
  }
  return {};
}

QString decisionTitle(std::optional<Decision> d) {
  if (!d) return {};
  switch (*d) {
    case Decision::kAccepted:
      return QObject::tr("accepted");
    case Decision::kRejected:
      return QObject::tr("rejected");
    case Decision::kSkipped:
      return QObject::tr("skipped");
  }
  return {};
}

// The suggestion's colour: unlike any category's, so it reads as "not in the labels yet".
QColor suggestionColour() { return QColor(40, 220, 120); }

struct LoadedImage {
  QImage image;
  std::vector<OverlayInstance> instances;
  QString note;
};

}  // namespace

std::string LabelReview::key(const Mistake& m) {
  std::string where;
  if (m.annotation_id) {
    where = std::to_string(*m.annotation_id);
  } else if (m.suggestion) {
    const auto& b = m.suggestion->bbox;
    char text[96];
    std::snprintf(text, sizeof text, "box %.0f,%.0f,%.0f,%.0f", b[0], b[1], b[2], b[3]);
    where = text;
  }
  return std::to_string(m.image_id) + ":" + where + ":" + review::kindName(m.kind);
}

LabelReview::LabelReview(QWidget* parent) : QWidget(parent) {
  pool_.setMaxThreadCount(1);
  auto* open = new QPushButton(tr("Open mistakes.json…"), this);
  kind_filter_ = new QComboBox(this);
  class_filter_ = new QComboBox(this);
  kind_filter_->setToolTip(tr("Show the findings of one kind"));
  class_filter_->setToolTip(tr("Show the findings of one class"));
  auto* top = new QHBoxLayout;
  top->addWidget(open);
  top->addWidget(kind_filter_);
  top->addWidget(class_filter_);
  top->addStretch(1);

  list_ = new QTreeWidget(this);
  list_->setColumnCount(7);
  list_->setHeaderLabels({tr("#"), tr("Score"), tr("Kind"), tr("Image"), tr("Annotation"),
                          tr("Decision"), tr("Why")});
  list_->setRootIsDecorated(false);
  list_->setUniformRowHeights(true);
  list_->header()->setStretchLastSection(true);
  view_ = new ImageView(this);
  view_->setShowImageBounds(true);
  editor_ = new AnnotationEditor(this);
  stack_ = new QStackedWidget(this);
  stack_->addWidget(view_);
  stack_->addWidget(editor_);
  edit_ = new QPushButton(tr("&Edit"), this);
  edit_->setCheckable(true);
  edit_->setToolTip(tr("Edit this image's annotations by hand (E): drag vertices, double-click "
                       "an edge to add one, Delete, P draws a polygon, B a box; Ctrl+Z undoes"));
  edit_class_ = new QComboBox(this);
  edit_class_->setToolTip(tr("The class of the selected instance and of new ones"));
  edit_class_->setVisible(false);
  detail_ = new QLabel(this);
  detail_->setWordWrap(true);
  detail_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  accept_ = new QPushButton(tr("&Accept"), this);
  reject_ = new QPushButton(tr("&Reject"), this);
  skip_ = new QPushButton(tr("&Skip"), this);
  save_ = new QPushButton(tr("Save Reviewed Copy"), this);
  use_ = new QPushButton(tr("Use in Spec"), this);
  use_->setToolTip(tr("Train on the reviewed copy: the spec's annotation file that names the "
                      "original now names the copy"));
  use_->setEnabled(false);
  accept_->setToolTip(tr("Apply the suggestion (A)"));
  reject_->setToolTip(tr("The label is right: mark the finding reviewed (R)"));
  skip_->setToolTip(tr("Decide later (S)"));
  save_->setToolTip(tr("Write the corrected annotations beside the original (never over it)"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(accept_);
  buttons->addWidget(reject_);
  buttons->addWidget(skip_);
  buttons->addSpacing(16);
  buttons->addWidget(edit_);
  buttons->addWidget(edit_class_);
  buttons->addStretch(1);
  buttons->addWidget(save_);
  buttons->addWidget(use_);
  auto* right = new QWidget(this);
  auto* right_layout = new QVBoxLayout(right);
  right_layout->setContentsMargins(0, 0, 0, 0);
  right_layout->addWidget(stack_, 1);
  right_layout->addWidget(detail_);
  right_layout->addLayout(buttons);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(list_);
  split->addWidget(right);
  split->setStretchFactor(1, 1);
  split->setSizes({520, 880});  // the list wide enough for its columns
  status_ = new QLabel(tr("Open the mistakes.json of a label check (Tasks › label_check)."), this);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(split, 1);
  layout->addWidget(status_);

  connect(open, &QPushButton::clicked, this, &LabelReview::chooseMistakes);
  connect(accept_, &QPushButton::clicked, this, [this] { accept(); });
  connect(reject_, &QPushButton::clicked, this, &LabelReview::reject);
  connect(skip_, &QPushButton::clicked, this, &LabelReview::skip);
  connect(save_, &QPushButton::clicked, this, [this] { saveReviewed(); });
  connect(use_, &QPushButton::clicked, this, [this] {
    if (!saved_.isEmpty()) emit useInSpec(QString::fromStdString(mistakes_.annotations), saved_);
  });
  connect(edit_, &QPushButton::toggled, this, &LabelReview::setEditing);
  connect(edit_class_, &QComboBox::activated, this, [this](int i) {
    editor_->setCurrentCategory(edit_class_->itemData(i).toLongLong());
  });
  connect(editor_, &AnnotationEditor::selectionChanged, this, [this](std::optional<int64_t> id) {
    if (!id || !annotations_) return;
    if (const Annotation* a = annotations_->find(*id)) {
      const int i = edit_class_->findData(QVariant::fromValue<qlonglong>(a->category_id));
      if (i >= 0) edit_class_->setCurrentIndex(i);
    }
  });
  connect(editor_, &AnnotationEditor::message, this, &LabelReview::setStatus);
  connect(editor_, &AnnotationEditor::annotationsChanged, this, [this] {
    if (annotations_)
      setStatus(tr("%1 edits in %2").arg(annotations_->changes()).arg(QString::fromStdString(annotations_->journalPath().string())));
  });
  connect(kind_filter_, &QComboBox::currentIndexChanged, this, &LabelReview::fillList);
  connect(class_filter_, &QComboBox::currentIndexChanged, this, &LabelReview::fillList);
  connect(list_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
    if (item) showFinding(item->data(kRank, Qt::UserRole).toInt());
  });
  for (const auto& [key, action] :
       {std::pair{Qt::Key_A, std::function<void()>([this] { accept(); })},
        std::pair{Qt::Key_R, std::function<void()>([this] { reject(); })},
        std::pair{Qt::Key_S, std::function<void()>([this] { skip(); })},
        std::pair{Qt::Key_E, std::function<void()>([this] { edit_->toggle(); })}}) {
    auto* shortcut = new QShortcut(QKeySequence(key), this);
    shortcut->setContext(Qt::WidgetWithChildrenShortcut);
    connect(shortcut, &QShortcut::activated, this, action);
  }
  for (QPushButton* b : {accept_, reject_, skip_, save_, edit_}) b->setEnabled(false);
}

bool LabelReview::editing() const { return stack_->currentWidget() == editor_; }

void LabelReview::setEditing(bool on) {
  if (on && (!annotations_ || current_ < 0 || view_->image().isNull())) on = false;
  if (edit_->isChecked() != on) {
    const QSignalBlocker block(edit_);
    edit_->setChecked(on);
  }
  edit_class_->setVisible(on);
  // A/R/S decide findings; in the editor the keys are the editor's.
  for (QPushButton* b : {accept_, reject_, skip_}) b->setEnabled(!on && annotations_);
  if (!on) {
    stack_->setCurrentWidget(view_);
    if (current_ >= 0) showFinding(current_);  // the edits drawn in the review's view
    return;
  }
  const Mistake& m = mistakes_.mistakes[static_cast<size_t>(current_)];
  std::vector<std::pair<int64_t, QString>> categories;
  edit_class_->clear();
  for (const auto& c : coco_->categories()) {
    categories.emplace_back(c.id, QString::fromStdString(c.name));
    edit_class_->addItem(QString::fromStdString(c.name), QVariant::fromValue<qlonglong>(c.id));
  }
  editor_->setImage(view_->image(), annotations_.get(), m.image_id, std::move(categories));
  if (m.annotation_id) editor_->select(*m.annotation_id);
  stack_->setCurrentWidget(editor_);
  editor_->setFocus();
}

LabelReview::~LabelReview() { waitForBackground(pool_); }

void LabelReview::setStatus(const QString& text) { status_->setText(text); }

QString LabelReview::statusText() const { return status_->text(); }

bool LabelReview::openMistakes(const QString& path, const QString& image_dir, QString* error) {
  try {
    review::MistakesFile file = review::readMistakesJson(path.toStdString());
    auto coco = std::make_shared<const dataset::CocoDataset>(dataset::loadCoco(file.annotations));
    auto annotations = std::make_unique<review::AnnotationSet>(review::AnnotationSet::open(file.annotations));
    QString images = image_dir;
    if (images.isEmpty() && file.image_dir) images = QString::fromStdString(*file.image_dir);
    if (images.isEmpty()) images = QFileInfo(QString::fromStdString(file.annotations)).absolutePath();
    waitForBackground(pool_);
    mistakes_ = std::move(file);
    coco_ = std::move(coco);
    annotations_ = std::move(annotations);
    image_dir_ = images;
    saved_.clear();
    use_->setEnabled(false);
  } catch (const std::exception& e) {
    const QString message = tr("Cannot open %1: %2").arg(path, QString::fromUtf8(e.what()));
    setStatus(message);
    if (error) *error = message;
    return false;
  }
  // The filters: the kinds and classes the findings have.
  std::set<MistakeKind> kinds;
  std::set<int64_t> classes;
  for (const Mistake& m : mistakes_.mistakes) {
    kinds.insert(m.kind);
    if (m.annotation_id) {
      if (const Annotation* a = annotations_->find(*m.annotation_id)) classes.insert(a->category_id);
    } else if (m.suggestion) {
      classes.insert(m.suggestion->category_id);
    }
  }
  const QSignalBlocker block_kind(kind_filter_), block_class(class_filter_);
  kind_filter_->clear();
  kind_filter_->addItem(tr("All kinds"), -1);
  for (MistakeKind k : kinds) kind_filter_->addItem(kindTitle(k), static_cast<int>(k));
  class_filter_->clear();
  class_filter_->addItem(tr("All classes"), QVariant::fromValue<qlonglong>(-1));
  for (int64_t c : classes)
    class_filter_->addItem(categoryName(*coco_, c), QVariant::fromValue<qlonglong>(c));
  current_ = -1;
  fillList();
  QString note = QString::fromStdString(annotations_->journalWarning());
  int decided = 0;
  for (size_t i = 0; i < mistakes_.mistakes.size(); ++i) decided += decision(static_cast<int>(i)).has_value();
  setStatus(tr("%1 findings, %2 decided; %3 edits so far in %4%5")
                .arg(mistakes_.mistakes.size())
                .arg(decided)
                .arg(annotations_->changes())
                .arg(QString::fromStdString(annotations_->journalPath().string()),
                     note.isEmpty() ? QString() : " — " + note));
  setEditing(false);
  for (QPushButton* b : {accept_, reject_, skip_, save_, edit_}) b->setEnabled(true);
  // Resume: the first finding without a decision.
  next();
  emit opened(path);
  return true;
}

void LabelReview::chooseMistakes() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open the mistakes of a label check"),
                                                    {}, tr("mistakes.json (*.json)"));
  if (!path.isEmpty()) openMistakes(path);
}

std::optional<Decision> LabelReview::decision(int index) const {
  if (!annotations_ || index < 0 || index >= static_cast<int>(mistakes_.mistakes.size())) return std::nullopt;
  const auto& d = annotations_->decisions();
  const auto it = d.find(key(mistakes_.mistakes[static_cast<size_t>(index)]));
  return it == d.end() ? std::nullopt : std::optional<Decision>(it->second);
}

void LabelReview::fillList() {
  const QSignalBlocker block(list_);
  list_->clear();
  if (!annotations_) return;
  const int kind = kind_filter_->currentData().toInt();
  const qlonglong cls = class_filter_->currentData().toLongLong();
  for (size_t i = 0; i < mistakes_.mistakes.size(); ++i) {
    const Mistake& m = mistakes_.mistakes[i];
    if (kind >= 0 && static_cast<int>(m.kind) != kind) continue;
    if (cls >= 0) {
      int64_t c = m.suggestion ? m.suggestion->category_id : -1;
      if (m.annotation_id) {
        if (const Annotation* a = annotations_->find(*m.annotation_id)) c = a->category_id;
      }
      if (c != cls) continue;
    }
    auto* item = new QTreeWidgetItem(list_);
    item->setData(kRank, Qt::UserRole, static_cast<int>(i));
    updateItem(static_cast<int>(i));
  }
  for (int c = 0; c < kDetail; ++c) list_->resizeColumnToContents(c);
}

void LabelReview::updateItem(int index) {
  const Mistake& m = mistakes_.mistakes[static_cast<size_t>(index)];
  for (int row = 0; row < list_->topLevelItemCount(); ++row) {
    QTreeWidgetItem* item = list_->topLevelItem(row);
    if (item->data(kRank, Qt::UserRole).toInt() != index) continue;
    item->setText(kRank, QString::number(index + 1));
    item->setText(kScore, QString::number(m.score, 'f', 3));
    item->setText(kKind, kindTitle(m.kind));
    QString image = QString::number(m.image_id);
    if (coco_) {
      if (const auto i = coco_->imageIndex(m.image_id))
        image = QString::fromUtf8(std::string(coco_->images()[*i].file_name).c_str());
    }
    item->setText(kImage, image);
    item->setText(kAnnotation, m.annotation_id ? QString::number(*m.annotation_id) : QString("—"));
    item->setText(kDecision, decisionTitle(decision(index)));
    item->setText(kDetail, QString::fromStdString(m.detail));
    return;
  }
}

bool LabelReview::select(int index) {
  for (int row = 0; row < list_->topLevelItemCount(); ++row) {
    QTreeWidgetItem* item = list_->topLevelItem(row);
    if (item->data(kRank, Qt::UserRole).toInt() == index) {
      list_->setCurrentItem(item);
      if (current_ != index) showFinding(index);
      return true;
    }
  }
  return false;
}

void LabelReview::showFinding(int index) {
  if (editing()) {  // another finding: the editor's image is no longer the one shown
    const QSignalBlocker block(edit_);
    edit_->setChecked(false);
    edit_class_->setVisible(false);
    stack_->setCurrentWidget(view_);
    for (QPushButton* b : {accept_, reject_, skip_}) b->setEnabled(true);
  }
  current_ = index;
  const Mistake m = mistakes_.mistakes[static_cast<size_t>(index)];
  QString suggestion;
  if (m.suggestion) {
    suggestion = tr("; suggestion: %1").arg(categoryName(*coco_, m.suggestion->category_id));
  } else if (m.kind == MistakeKind::kSpurious || m.kind == MistakeKind::kDuplicate) {
    suggestion = tr("; suggestion: delete it");
  }
  detail_->setText(QStringLiteral("<b>%1</b> (%2) — %3%4")
                       .arg(kindTitle(m.kind), QString::number(m.score, 'f', 3),
                            QString::fromStdString(m.detail).toHtmlEscaped(), suggestion.toHtmlEscaped()));
  // The annotations as they now stand (edits included), drawn off the UI thread.
  std::vector<Annotation> shown;
  for (const Annotation* a : annotations_->ofImage(m.image_id)) shown.push_back(*a);
  const uint64_t generation = ++image_generation_;
  const auto coco = coco_;
  const QString image_dir = image_dir_;
  runInBackground(
      pool_, this,
      [coco, image_dir, m, shown] {
        LoadedImage out;
        const std::optional<uint32_t> image_index = coco->imageIndex(m.image_id);
        if (!image_index) {
          out.note = QObject::tr("image %1 is not in the annotation file").arg(m.image_id);
          return out;
        }
        const dataset::CocoImage& image = coco->images()[*image_index];
        ImageFile file = readImageOrCanvas(
            imagePath(image_dir, image),
            QSize(static_cast<int>(image.width), static_cast<int>(image.height)));
        out.image = std::move(file.image);
        if (!file.problem.isEmpty())
          out.note = QObject::tr("the image cannot be shown: %1").arg(file.problem);
        for (const Annotation& a : shown) {
          out.instances.push_back(annotationOverlay(a, *coco, image.height, image.width,
                                            m.annotation_id && *m.annotation_id == a.id));
        }
        if (m.suggestion) {
          Annotation s;
          s.category_id = m.suggestion->category_id;
          s.bbox = m.suggestion->bbox;
          s.rle = m.suggestion->mask;
          OverlayInstance i = annotationOverlay(s, *coco, image.height, image.width, false);
          i.colour = suggestionColour();
          i.label = QObject::tr("suggested: %1").arg(categoryName(*coco, s.category_id));
          if (!s.rle) i.box = QRectF(s.bbox[0], s.bbox[1], s.bbox[2], s.bbox[3]);
          out.instances.push_back(std::move(i));
        }
        return out;
      },
      [this, generation, index](LoadedImage loaded) {
        if (generation != image_generation_) return;
        view_->setImage(loaded.image);
        view_->setInstances(std::move(loaded.instances));
        view_->setCaption(loaded.note);
        emit imageShown(index);
      });
}

bool LabelReview::applySuggestion(const Mistake& m, QString* why) {
  const auto gone = [&] {
    *why = tr("annotation %1 is no longer there (an earlier edit)").arg(*m.annotation_id);
    return false;
  };
  switch (m.kind) {
    case MistakeKind::kSpurious:
    case MistakeKind::kDuplicate:
      if (!annotations_->find(*m.annotation_id)) return gone();
      annotations_->remove(*m.annotation_id);
      return true;
    case MistakeKind::kWrongClass: {
      const Annotation* a = annotations_->find(*m.annotation_id);
      if (!a) return gone();
      Annotation after = *a;
      after.category_id = m.suggestion->category_id;
      annotations_->update(after);
      return true;
    }
    case MistakeKind::kLocalization:
    case MistakeKind::kMissing: {
      Annotation after;
      if (m.kind == MistakeKind::kLocalization) {
        const Annotation* a = annotations_->find(*m.annotation_id);
        if (!a) return gone();
        after = *a;
      } else {
        after.image_id = m.image_id;
        after.category_id = m.suggestion->category_id;
      }
      // The model's shape as polygons (vertices a person can still drag); a box-only
      // suggestion as its box.
      const auto& b = m.suggestion->bbox;
      after.rle.reset();
      after.polygons.clear();
      if (m.suggestion->mask) after.polygons = dataset::polygonsFromMask(*m.suggestion->mask);
      if (after.polygons.empty()) after.polygons = {{b[0], b[1], b[0] + b[2], b[1], b[0] + b[2], b[1] + b[3], b[0], b[1] + b[3]}};
      after.bbox = b;
      after.area = m.suggestion->mask ? static_cast<double>(dataset::area(*m.suggestion->mask)) : b[2] * b[3];
      if (m.kind == MistakeKind::kMissing) {
        annotations_->add(after);
      } else {
        annotations_->update(after);
      }
      return true;
    }
  }
  return false;
}

bool LabelReview::accept() {
  if (!annotations_ || current_ < 0 || editing()) return false;
  const Mistake m = mistakes_.mistakes[static_cast<size_t>(current_)];
  try {
    QString why;
    if (!applySuggestion(m, &why)) {
      setStatus(tr("Not applied: %1").arg(why));
      return false;
    }
  } catch (const std::exception& e) {
    setStatus(tr("Not applied: %1").arg(QString::fromUtf8(e.what())));
    return false;
  }
  decide(Decision::kAccepted);
  return true;
}

void LabelReview::reject() { decide(Decision::kRejected); }
void LabelReview::skip() { decide(Decision::kSkipped); }

void LabelReview::decide(Decision d) {
  if (!annotations_ || current_ < 0 || editing()) return;
  try {
    annotations_->decide(key(mistakes_.mistakes[static_cast<size_t>(current_)]), d);
  } catch (const std::exception& e) {
    setStatus(tr("The decision could not be saved: %1").arg(QString::fromUtf8(e.what())));
    return;
  }
  updateItem(current_);
  setStatus(tr("%1: %2 (%3 edits in %4)")
                .arg(current_ + 1)
                .arg(decisionTitle(d))
                .arg(annotations_->changes())
                .arg(QString::fromStdString(annotations_->journalPath().string())));
  next();
}

void LabelReview::next() {
  // The next listed finding without a decision, after the current one (wrapping around).
  const int rows = list_->topLevelItemCount();
  if (rows == 0) return;
  int start = 0;
  for (int row = 0; row < rows; ++row) {
    if (list_->topLevelItem(row)->data(kRank, Qt::UserRole).toInt() == current_) start = row + 1;
  }
  for (int k = 0; k < rows; ++k) {
    const int row = (start + k) % rows;
    const int index = list_->topLevelItem(row)->data(kRank, Qt::UserRole).toInt();
    if (!decision(index)) {
      select(index);
      return;
    }
  }
  if (current_ < 0) select(list_->topLevelItem(0)->data(kRank, Qt::UserRole).toInt());
}

QString LabelReview::saveReviewed(QString* error) {
  if (!annotations_) return {};
  try {
    const QString path = QString::fromStdString(annotations_->saveReviewed().string());
    saved_ = path;
    use_->setEnabled(true);
    setStatus(tr("Saved the reviewed annotations to %1 (%2 edits)").arg(path).arg(annotations_->changes()));
    return path;
  } catch (const std::exception& e) {
    const QString message = tr("Cannot save: %1").arg(QString::fromUtf8(e.what()));
    setStatus(message);
    if (error) *error = message;
    return {};
  }
}

}  // namespace mrcnn::ui

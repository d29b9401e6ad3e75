// The annotation editor: one image's annotations edited by hand over the picture. Select an
// instance (click inside it); drag its vertices, or its box's corners (a box-only
// annotation); double-click an edge to insert a vertex there; Delete removes the selected
// vertex (a polygon keeps at least 3) or, with none selected, the instance; Draw Polygon
// (P: click the corners, Enter or a double-click closes it) and Draw Box (B: drag) add one
// of the chosen class; the class box changes the selected one's class. Every change goes
// through a QUndoStack (undo/redo) into the annotation file's journal
// (review/annotation_set.h), so nothing made is lost. The wheel zooms about the cursor; the
// right or middle button pans.
#pragma once

#include <QGraphicsView>
#include <QImage>
#include <QUndoStack>
#include <optional>
#include <vector>

#include "review/annotation_set.h"

class QGraphicsPixmapItem;

namespace mrcnn::ui {

class AnnotationEditor : public QGraphicsView {
  Q_OBJECT

 public:
  enum class Mode { Select, DrawPolygon, DrawBox };

  explicit AnnotationEditor(QWidget* parent = nullptr);
  ~AnnotationEditor() override;

  // The image and the file whose annotations of `image_id` are edited (not owned; it must
  // outlive the editor's use of it). `categories`: id and name, for the class box and labels.
  void setImage(const QImage& image, review::AnnotationSet* annotations, int64_t image_id,
                std::vector<std::pair<int64_t, QString>> categories);
  void clear();

  QUndoStack* undoStack() { return &undo_; }
  Mode mode() const { return mode_; }
  void setMode(Mode mode);
  // The class new instances get, and the selected one's when it changes.
  int64_t currentCategory() const { return category_; }
  void setCurrentCategory(int64_t category_id);
  std::optional<int64_t> selected() const { return selected_; }
  void select(std::optional<int64_t> annotation_id);
  std::optional<int> selectedVertex() const { return vertex_; }

  // Scene (= image pixel) coordinates of the view's point, and back.
  QPointF toImage(QPoint view_point) const;
  QPoint toView(QPointF image_point) const;
  void fitToWindow();

 signals:
  // After any change (an edit, an undo or redo): redraw whatever else shows the annotations.
  void annotationsChanged();
  void selectionChanged(std::optional<int64_t> annotation_id);
  void message(const QString& text);

 protected:
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void drawForeground(QPainter* painter, const QRectF& rect) override;

 private:
  friend class AnnotationEdit;
  // The annotation's editable outline: its first polygon, or its box's corners.
  std::vector<QPointF> outline(const review::Annotation& a) const;
  // Applies `after` (a new outline for the selected annotation) as one undoable edit.
  void commitOutline(const std::vector<QPointF>& points, const QString& what);
  void commit(std::optional<review::Annotation> before, std::optional<review::Annotation> after,
              const QString& what);
  std::optional<int> vertexAt(QPointF image_point) const;
  std::optional<int64_t> annotationAt(QPointF image_point) const;
  std::optional<int> edgeAt(QPointF image_point) const;
  double handleRadius() const;  // in image pixels, for ~5 screen pixels
  void finishPolygon();
  void refresh();  // after the annotations changed (also from undo/redo)

  review::AnnotationSet* annotations_ = nullptr;
  int64_t image_id_ = 0;
  std::vector<std::pair<int64_t, QString>> categories_;
  QImage image_;
  QGraphicsPixmapItem* pixmap_ = nullptr;
  QUndoStack undo_;
  Mode mode_ = Mode::Select;
  int64_t category_ = 0;
  std::optional<int64_t> selected_;
  std::optional<int> vertex_;
  // A drag under way: the selected outline as it is being moved.
  std::optional<std::vector<QPointF>> dragging_;
  QPointF drag_from_;
  std::vector<QPointF> drawing_;    // the polygon or box being drawn
  std::optional<QPoint> panning_;   // the last pan position (view coordinates)
  bool fit_ = true;
};

}  // namespace mrcnn::ui

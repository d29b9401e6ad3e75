#include "ui/annotation_editor/annotation_editor.h"

#include <QGraphicsPixmapItem>
#include <QGraphicsScene>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QScrollBar>
#include <QUndoCommand>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "dataset/mask/mask_polygons.h"
#include "ui/common/overlay.h"

namespace mrcnn::ui {

using review::Annotation;

// One change of one annotation, as the undo stack holds it: before and after (none: it did
// not exist / no longer exists). redo() and undo() go through the annotation file, whose
// journal records each.
class AnnotationEdit : public QUndoCommand {
 public:
  AnnotationEdit(AnnotationEditor* editor, std::optional<Annotation> before,
                 std::optional<Annotation> after, const QString& text)
      : QUndoCommand(text), editor_(editor), before_(std::move(before)), after_(std::move(after)) {}

  void redo() override { apply(before_, after_); }
  void undo() override { apply(after_, before_); }

 private:
  void apply(const std::optional<Annotation>& from, const std::optional<Annotation>& to) {
    review::AnnotationSet* set = editor_->annotations_;
    try {
      if (from && to) {
        set->update(*to);
      } else if (to) {
        set->add(*to);
      } else if (from) {
        set->remove(from->id);
      }
    } catch (const std::exception& e) {
      emit editor_->message(QObject::tr("Not saved: %1").arg(QString::fromUtf8(e.what())));
    }
    editor_->refresh();
  }

  AnnotationEditor* editor_;
  std::optional<Annotation> before_, after_;
};

namespace {

std::vector<QPointF> points(const dataset::Polygon& xy) {
  std::vector<QPointF> out;
  for (size_t k = 0; k + 1 < xy.size(); k += 2) out.emplace_back(xy[k], xy[k + 1]);
  return out;
}

dataset::Polygon flat(const std::vector<QPointF>& pts) {
  dataset::Polygon xy;
  for (const QPointF& p : pts) {
    xy.push_back(std::round(p.x() * 100) / 100);
    xy.push_back(std::round(p.y() * 100) / 100);
  }
  return xy;
}

bool inside(const std::vector<QPointF>& polygon, QPointF p) {
  QPolygonF q;
  for (const QPointF& v : polygon) q << v;
  return q.containsPoint(p, Qt::OddEvenFill);
}

double distanceToSegment(QPointF p, QPointF a, QPointF b) {
  const QPointF ab = b - a;
  const double len2 = QPointF::dotProduct(ab, ab);
  const double t = len2 > 0 ? std::clamp(QPointF::dotProduct(p - a, ab) / len2, 0.0, 1.0) : 0.0;
  const QPointF c = a + t * ab;
  return std::hypot(p.x() - c.x(), p.y() - c.y());
}

// Box and area of polygons as COCO has them (the area as pycocotools rasterises them).
void setCocoGeometry(Annotation& a, uint32_t h, uint32_t w) {
  double x0 = 1e18, y0 = 1e18, x1 = -1e18, y1 = -1e18;
  for (const auto& p : a.polygons) {
    for (size_t k = 0; k + 1 < p.size(); k += 2) {
      x0 = std::min(x0, p[k]);
      x1 = std::max(x1, p[k]);
      y0 = std::min(y0, p[k + 1]);
      y1 = std::max(y1, p[k + 1]);
    }
  }
  if (x1 < x0) return;
  a.bbox = {x0, y0, x1 - x0, y1 - y0};
  a.area = static_cast<double>(dataset::area(dataset::rleFromPolygons(a.polygons, h, w)));
}

}  // namespace

AnnotationEditor::AnnotationEditor(QWidget* parent) : QGraphicsView(parent) {
  setScene(new QGraphicsScene(this));
  setDragMode(QGraphicsView::NoDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setRenderHint(QPainter::Antialiasing);
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  pixmap_ = scene()->addPixmap(QPixmap());
  connect(&undo_, &QUndoStack::indexChanged, this, [this] { emit annotationsChanged(); });
}

AnnotationEditor::~AnnotationEditor() = default;

void AnnotationEditor::setImage(const QImage& image, review::AnnotationSet* annotations,
                                int64_t image_id, std::vector<std::pair<int64_t, QString>> categories) {
  undo_.clear();  // edits of another image are not undone here (they stay in the journal)
  image_ = image;
  annotations_ = annotations;
  image_id_ = image_id;
  categories_ = std::move(categories);
  if (category_ == 0 && !categories_.empty()) category_ = categories_.front().first;
  pixmap_->setPixmap(QPixmap::fromImage(image));
  const QRectF frame(-16, -16, image.width() + 32, image.height() + 32);
  scene()->setSceneRect(frame);
  selected_.reset();
  vertex_.reset();
  dragging_.reset();
  drawing_.clear();
  fit_ = true;
  fitToWindow();
  viewport()->update();
}

void AnnotationEditor::clear() {
  setImage(QImage(), nullptr, 0, {});
}

void AnnotationEditor::setMode(Mode mode) {
  mode_ = mode;
  drawing_.clear();
  setCursor(mode == Mode::Select ? Qt::ArrowCursor : Qt::CrossCursor);
  viewport()->update();
}

void AnnotationEditor::setCurrentCategory(int64_t category_id) {
  category_ = category_id;
  if (!selected_ || !annotations_) return;
  const Annotation* a = annotations_->find(*selected_);
  if (!a || a->category_id == category_id) return;
  Annotation after = *a;
  after.category_id = category_id;
  commit(*a, after, tr("Change the class"));
}

void AnnotationEditor::select(std::optional<int64_t> annotation_id) {
  selected_ = annotation_id;
  vertex_.reset();
  viewport()->update();
  emit selectionChanged(selected_);
}

QPointF AnnotationEditor::toImage(QPoint view_point) const { return mapToScene(view_point); }
QPoint AnnotationEditor::toView(QPointF image_point) const { return mapFromScene(image_point); }

void AnnotationEditor::fitToWindow() {
  if (image_.isNull()) return;
  fitInView(scene()->sceneRect(), Qt::KeepAspectRatio);
}

double AnnotationEditor::handleRadius() const {
  const double scale = std::max(1e-6, transform().m11());
  return 5.0 / scale;
}

std::vector<QPointF> AnnotationEditor::outline(const Annotation& a) const {
  if (!a.polygons.empty()) return points(a.polygons.front());
  if (a.rle) {
    const auto polygons = dataset::polygonsFromMask(*a.rle);
    if (!polygons.empty()) return points(polygons.front());
  }
  const auto& b = a.bbox;
  return {QPointF(b[0], b[1]), QPointF(b[0] + b[2], b[1]), QPointF(b[0] + b[2], b[1] + b[3]),
          QPointF(b[0], b[1] + b[3])};
}

std::optional<int> AnnotationEditor::vertexAt(QPointF p) const {
  if (!selected_ || !annotations_) return std::nullopt;
  const Annotation* a = annotations_->find(*selected_);
  if (!a) return std::nullopt;
  const std::vector<QPointF> pts = dragging_ ? *dragging_ : outline(*a);
  const double r = handleRadius() * 1.5;
  for (size_t k = 0; k < pts.size(); ++k)
    if (std::hypot(pts[k].x() - p.x(), pts[k].y() - p.y()) <= r) return static_cast<int>(k);
  return std::nullopt;
}

std::optional<int> AnnotationEditor::edgeAt(QPointF p) const {
  if (!selected_ || !annotations_) return std::nullopt;
  const Annotation* a = annotations_->find(*selected_);
  if (!a) return std::nullopt;
  const std::vector<QPointF> pts = outline(*a);
  const double r = handleRadius() * 1.5;
  for (size_t k = 0; k < pts.size(); ++k) {
    if (distanceToSegment(p, pts[k], pts[(k + 1) % pts.size()]) <= r) return static_cast<int>(k);
  }
  return std::nullopt;
}

std::optional<int64_t> AnnotationEditor::annotationAt(QPointF p) const {
  if (!annotations_) return std::nullopt;
  std::optional<int64_t> best;
  double best_area = 1e300;
  for (const Annotation* a : annotations_->ofImage(image_id_)) {
    const double area = a->bbox[2] * a->bbox[3];
    if (area < best_area && inside(outline(*a), p)) {
      best = a->id;
      best_area = area;  // the smallest under the cursor: the one on top
    }
  }
  return best;
}

void AnnotationEditor::commit(std::optional<Annotation> before, std::optional<Annotation> after,
                              const QString& what) {
  undo_.push(new AnnotationEdit(this, std::move(before), std::move(after), what));
}

void AnnotationEditor::commitOutline(const std::vector<QPointF>& pts, const QString& what) {
  const Annotation* a = annotations_ ? annotations_->find(*selected_) : nullptr;
  if (!a) return;
  Annotation after = *a;
  const auto h = static_cast<uint32_t>(image_.height()), w = static_cast<uint32_t>(image_.width());
  if (a->polygons.empty() && !a->rle) {  // a box: the outline is its corners
    double x0 = pts[0].x(), y0 = pts[0].y(), x1 = x0, y1 = y0;
    for (const QPointF& p : pts) {
      x0 = std::min(x0, p.x());
      x1 = std::max(x1, p.x());
      y0 = std::min(y0, p.y());
      y1 = std::max(y1, p.y());
    }
    after.bbox = {x0, y0, x1 - x0, y1 - y0};
    after.area = after.bbox[2] * after.bbox[3];
  } else {
    // A mask edited by its outline becomes a polygon; other parts of a polygon stay.
    if (after.polygons.empty()) after.polygons.push_back({});
    after.rle.reset();
    after.polygons.front() = flat(pts);
    setCocoGeometry(after, h, w);
  }
  commit(*a, after, what);
}

void AnnotationEditor::finishPolygon() {
  if (drawing_.size() >= 3 && annotations_) {
    Annotation a;
    a.image_id = image_id_;
    a.category_id = category_;
    a.polygons = {flat(drawing_)};
    setCocoGeometry(a, static_cast<uint32_t>(image_.height()), static_cast<uint32_t>(image_.width()));
    a.id = annotations_->nextId();
    commit(std::nullopt, a, tr("Draw a polygon"));
    select(a.id);
  }
  drawing_.clear();
  viewport()->update();
}

void AnnotationEditor::refresh() {
  if (selected_ && annotations_ && !annotations_->find(*selected_)) select(std::nullopt);
  viewport()->update();
}

void AnnotationEditor::mousePressEvent(QMouseEvent* event) {
  setFocus();
  if (event->button() == Qt::RightButton || event->button() == Qt::MiddleButton) {
    panning_ = event->position().toPoint();
    return;
  }
  if (event->button() != Qt::LeftButton || !annotations_) return;
  const QPointF p = toImage(event->position().toPoint());
  if (mode_ == Mode::DrawPolygon) {
    drawing_.push_back(p);
  } else if (mode_ == Mode::DrawBox) {
    drawing_ = {p, p};
  } else if (const std::optional<int> v = vertexAt(p)) {
    vertex_ = v;
    dragging_ = outline(*annotations_->find(*selected_));
    drag_from_ = p;
  } else if (selected_ && edgeAt(p)) {
    vertex_.reset();  // on the selected one's edge (a double-click inserts a vertex there)
  } else {
    select(annotationAt(p));
  }
  viewport()->update();
}

void AnnotationEditor::mouseMoveEvent(QMouseEvent* event) {
  if (panning_) {
    const QPoint now = event->position().toPoint();
    const QPoint delta = now - *panning_;
    panning_ = now;
    horizontalScrollBar()->setValue(horizontalScrollBar()->value() - delta.x());
    verticalScrollBar()->setValue(verticalScrollBar()->value() - delta.y());
    fit_ = false;
    return;
  }
  const QPointF p = toImage(event->position().toPoint());
  if (mode_ == Mode::DrawBox && drawing_.size() == 2) {
    drawing_[1] = p;
  } else if (dragging_ && vertex_) {
    const Annotation* a = annotations_->find(*selected_);
    auto& pts = *dragging_;
    const auto k = static_cast<size_t>(*vertex_);
    if (a && a->polygons.empty() && !a->rle && pts.size() == 4) {
      // A box's corner: its two neighbours follow, so the box stays a box.
      const size_t x_mate = k ^ 1u, y_mate = 3 - k;
      pts[x_mate].setY(p.y());
      pts[y_mate].setX(p.x());
    }
    pts[k] = p;
  } else {
    return;
  }
  viewport()->update();
}

void AnnotationEditor::mouseReleaseEvent(QMouseEvent* event) {
  if (panning_ && event->button() != Qt::LeftButton) {
    panning_.reset();
    return;
  }
  if (event->button() != Qt::LeftButton) return;
  if (mode_ == Mode::DrawBox && drawing_.size() == 2) {
    const QRectF r = QRectF(drawing_[0], drawing_[1]).normalized();
    drawing_.clear();
    if (r.width() >= 2 && r.height() >= 2 && annotations_) {
      Annotation a;
      a.image_id = image_id_;
      a.category_id = category_;
      a.polygons = {{r.left(), r.top(), r.right(), r.top(), r.right(), r.bottom(), r.left(), r.bottom()}};
      setCocoGeometry(a, static_cast<uint32_t>(image_.height()), static_cast<uint32_t>(image_.width()));
      a.id = annotations_->nextId();
      commit(std::nullopt, a, tr("Draw a box"));
      select(a.id);
    }
    viewport()->update();
    return;
  }
  if (dragging_) {
    const QPointF p = toImage(event->position().toPoint());
    const bool moved = std::hypot(p.x() - drag_from_.x(), p.y() - drag_from_.y()) > 1e-9;
    const std::vector<QPointF> pts = *dragging_;
    dragging_.reset();
    if (moved) commitOutline(pts, tr("Move a vertex"));
    viewport()->update();
  }
}

void AnnotationEditor::mouseDoubleClickEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || !annotations_) return;
  const QPointF p = toImage(event->position().toPoint());
  if (mode_ == Mode::DrawPolygon) {
    finishPolygon();
    return;
  }
  const std::optional<int> edge = edgeAt(p);
  if (!selected_ || !edge || vertexAt(p)) return;
  const Annotation* a = annotations_->find(*selected_);
  if (!a || (a->polygons.empty() && !a->rle)) return;  // a box has no vertices to add
  std::vector<QPointF> pts = outline(*a);
  pts.insert(pts.begin() + *edge + 1, p);
  vertex_ = *edge + 1;
  commitOutline(pts, tr("Insert a vertex"));
}

void AnnotationEditor::keyPressEvent(QKeyEvent* event) {
  if (!annotations_) return QGraphicsView::keyPressEvent(event);
  switch (event->key()) {
    case Qt::Key_Delete:
    case Qt::Key_Backspace: {
      if (!selected_) return;
      const Annotation* a = annotations_->find(*selected_);
      if (!a) return;
      if (vertex_ && (!a->polygons.empty() || a->rle)) {
        std::vector<QPointF> pts = outline(*a);
        if (pts.size() <= 3) {
          emit message(tr("A polygon keeps at least 3 vertices: delete the instance instead"));
          return;
        }
        pts.erase(pts.begin() + *vertex_);
        vertex_.reset();
        commitOutline(pts, tr("Delete a vertex"));
        return;
      }
      const Annotation before = *a;
      commit(before, std::nullopt, tr("Delete an instance"));
      select(std::nullopt);
      return;
    }
    case Qt::Key_Return:
    case Qt::Key_Enter:
      if (mode_ == Mode::DrawPolygon) finishPolygon();
      return;
    case Qt::Key_Escape:
      if (!drawing_.empty()) {
        drawing_.clear();
        viewport()->update();
      } else {
        select(std::nullopt);
      }
      return;
    case Qt::Key_P:
      setMode(mode_ == Mode::DrawPolygon ? Mode::Select : Mode::DrawPolygon);
      return;
    case Qt::Key_B:
      setMode(mode_ == Mode::DrawBox ? Mode::Select : Mode::DrawBox);
      return;
    default:
      if (event->matches(QKeySequence::Undo)) {
        undo_.undo();
      } else if (event->matches(QKeySequence::Redo)) {
        undo_.redo();
      } else {
        QGraphicsView::keyPressEvent(event);
      }
  }
}

void AnnotationEditor::wheelEvent(QWheelEvent* event) {
  const double factor = std::pow(1.0015, event->angleDelta().y());
  scale(factor, factor);
  fit_ = false;
  viewport()->update();
}

void AnnotationEditor::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  if (fit_) fitToWindow();
}

void AnnotationEditor::drawForeground(QPainter* painter, const QRectF&) {
  if (!annotations_) return;
  const double px = 1.0 / std::max(1e-6, transform().m11());  // one screen pixel
  QFont font = painter->font();
  font.setPixelSize(std::max(1, static_cast<int>(std::lround(12 * px))));
  painter->setFont(font);
  const auto name = [&](int64_t id) {
    for (const auto& [cid, n] : categories_)
      if (cid == id) return n;
    return QString::number(id);
  };
  for (const Annotation* a : annotations_->ofImage(image_id_)) {
    const bool chosen = selected_ && *selected_ == a->id;
    QColor colour = chosen ? highlightColour() : categoryColour(a->category_id);
    const std::vector<QPointF> pts = chosen && dragging_ ? *dragging_ : outline(*a);
    QPolygonF polygon;
    for (const QPointF& p : pts) polygon << p;
    QColor fill = colour;
    fill.setAlpha(chosen ? 70 : 45);
    painter->setPen(QPen(colour, (chosen ? 2.5 : 1.5) * px));
    painter->setBrush(a->iscrowd ? QBrush(fill, Qt::BDiagPattern) : QBrush(fill));
    painter->drawPolygon(polygon);
    for (size_t k = 1; k < a->polygons.size(); ++k) {  // the other parts of a multi-part one
      QPolygonF part;
      for (const QPointF& p : points(a->polygons[k])) part << p;
      painter->drawPolygon(part);
    }
    painter->setPen(colour);
    painter->drawText(polygon.boundingRect().topLeft() - QPointF(0, 3 * px), name(a->category_id));
    if (!chosen) continue;
    const double r = handleRadius();
    for (size_t k = 0; k < pts.size(); ++k) {
      const bool hot = vertex_ && static_cast<size_t>(*vertex_) == k;
      painter->setPen(QPen(Qt::white, px));
      painter->setBrush(hot ? QBrush(Qt::yellow) : QBrush(colour));
      painter->drawRect(QRectF(pts[k].x() - r, pts[k].y() - r, 2 * r, 2 * r));
    }
  }
  if (!drawing_.empty()) {
    painter->setPen(QPen(QColor(40, 220, 120), 2 * px, Qt::DashLine));
    painter->setBrush(Qt::NoBrush);
    if (mode_ == Mode::DrawBox && drawing_.size() == 2) {
      painter->drawRect(QRectF(drawing_[0], drawing_[1]).normalized());
    } else {
      QPolygonF open;
      for (const QPointF& p : drawing_) open << p;
      painter->drawPolyline(open);
    }
  }
}

}  // namespace mrcnn::ui

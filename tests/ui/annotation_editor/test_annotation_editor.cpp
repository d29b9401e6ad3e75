// The annotation editor driven with the mouse and keyboard on tinycoco's real annotations: a
// vertex dragged (the journalled polygon moved; undo restores it, redo moves it again), a
// vertex inserted on an edge and deleted, a box drawn and selected and deleted and brought
// back; every change in the journal, the original file untouched.
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "review/annotation_set.h"
#include "tests/common/files.h"
#include "ui/annotation_editor/annotation_editor.h"

using mrcnn::review::Annotation;
using mrcnn::review::AnnotationSet;
using mrcnn::ui::AnnotationEditor;

namespace {

// A file's bytes (tests/common/files.h) as Qt compares them.
QByteArray bytesOf(const QString& path) {
  return QByteArray::fromStdString(mrcnn::testing::readAll(path.toStdString()));
}

}  // namespace

class AnnotationEditorTest : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void editingWithTheMouse() {
    const QString source = qEnvironmentVariable("MRCNN_SHARED_DIR") + "/data/tinycoco/annotations/instances_val2017.json";
    if (!QFile::exists(source)) QSKIP("tinycoco is not there (MRCNN_SHARED_DIR)");
    const QString file = dir_.filePath("val.json");
    QVERIFY(QFile::copy(source, file));
    const QByteArray original = bytesOf(file);
    AnnotationSet set = AnnotationSet::open(file.toStdString());
    // A polygon of the first image with a few vertices, not a crowd.
    const int64_t image = set.annotations().front().image_id;
    const Annotation* chosen = nullptr;
    for (const Annotation* a : set.ofImage(image))
      if (!a->iscrowd && !a->polygons.empty() && a->polygons[0].size() >= 12 && a->bbox[2] > 60) chosen = a;
    QVERIFY(chosen);
    const int64_t id = chosen->id;
    const mrcnn::dataset::Polygon before = chosen->polygons[0];

    AnnotationEditor editor;
    editor.resize(900, 700);
    editor.show();
    QVERIFY(QTest::qWaitForWindowExposed(&editor));
    QImage picture(640, 480, QImage::Format_RGB32);
    picture.fill(Qt::gray);
    editor.setImage(picture, &set, image, {{1, "person"}, {62, "chair"}});
    editor.select(id);
    QWidget* vp = editor.viewport();

    // Drag vertex 0 by (12, 7) image pixels.
    const QPointF v0(before[0], before[1]);
    const QPoint from = editor.toView(v0);
    const QPoint to = editor.toView(v0 + QPointF(12, 7));
    QTest::mousePress(vp, Qt::LeftButton, {}, from);
    QCOMPARE(editor.selectedVertex().value_or(-1), 0);
    QTest::mouseMove(vp, to);
    QTest::mouseRelease(vp, Qt::LeftButton, {}, to);
    const QPointF landed = editor.toImage(to);
    const auto& moved = set.find(id)->polygons[0];
    QVERIFY2(std::abs(moved[0] - landed.x()) < 0.02 && std::abs(moved[1] - landed.y()) < 0.02,
             qPrintable(QString("%1,%2 vs %3,%4").arg(moved[0]).arg(moved[1]).arg(landed.x()).arg(landed.y())));
    QVERIFY(std::abs(moved[0] - (v0.x() + 12)) < 1.5 && std::abs(moved[1] - (v0.y() + 7)) < 1.5);
    QVERIFY(std::equal(moved.begin() + 2, moved.end(), before.begin() + 2, before.end()));
    QCOMPARE(editor.undoStack()->count(), 1);
    editor.undoStack()->undo();
    QVERIFY(set.find(id)->polygons[0] == before);  // restored exactly
    editor.undoStack()->redo();
    QCOMPARE(set.find(id)->polygons[0][0], moved[0]);

    // Double-click the middle of edge 1-2: a vertex there; Delete takes it out again.
    const auto& p = set.find(id)->polygons[0];
    const size_t n = p.size() / 2;
    const QPointF mid((p[2] + p[4]) / 2, (p[3] + p[5]) / 2);
    QTest::mouseDClick(vp, Qt::LeftButton, {}, editor.toView(mid));
    QCOMPARE(set.find(id)->polygons[0].size() / 2, n + 1);
    QCOMPARE(editor.selectedVertex().value_or(-1), 2);
    editor.setFocus();
    QTest::keyClick(&editor, Qt::Key_Delete);
    QCOMPARE(set.find(id)->polygons[0].size() / 2, n);

    // Draw a box (B, drag), then select it by a click inside and delete it; undo restores it.
    const size_t count = set.ofImage(image).size();
    QTest::keyClick(&editor, Qt::Key_B);
    QCOMPARE(editor.mode(), AnnotationEditor::Mode::DrawBox);
    editor.setCurrentCategory(62);
    // (small: the smallest instance under the cursor is the one a click selects)
    QTest::mousePress(vp, Qt::LeftButton, {}, editor.toView(QPointF(20, 300)));
    QTest::mouseMove(vp, editor.toView(QPointF(36, 312)));
    QTest::mouseRelease(vp, Qt::LeftButton, {}, editor.toView(QPointF(36, 312)));
    QCOMPARE(set.ofImage(image).size(), count + 1);
    const Annotation drawn = *set.ofImage(image).back();
    QCOMPARE(drawn.category_id, int64_t{62});
    QVERIFY(std::abs(drawn.bbox[0] - 20) < 1.5 && std::abs(drawn.bbox[2] - 16) < 1.5);
    QVERIFY(drawn.area > 120);
    QTest::keyClick(&editor, Qt::Key_B);  // back to selecting
    editor.select(std::nullopt);
    QTest::mouseClick(vp, Qt::LeftButton, {}, editor.toView(QPointF(28, 306)));
    QCOMPARE(editor.selected().value_or(-1), drawn.id);
    QTest::keyClick(&editor, Qt::Key_Delete);
    QVERIFY(!set.find(drawn.id));
    editor.undoStack()->undo();
    QVERIFY(set.find(drawn.id));

    // All of it in the journal: the file opened again has the same annotations.
    const AnnotationSet again = AnnotationSet::open(file.toStdString());
    QVERIFY(again.annotations() == set.annotations());
    QCOMPARE(bytesOf(file), original);
  }
};

QTEST_MAIN(AnnotationEditorTest)
#include "test_annotation_editor.moc"

// The label review driven as a user drives it, on tinycoco's real annotations and images: a
// mistakes.json of one finding of each kind, accepted (A), rejected (R) and skipped (S) from
// the keyboard; the edits land in the annotations' journal, the original file stays as it
// was, the reviewed copy holds the edits, and a review opened again resumes at the first
// finding without a decision.
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QPushButton>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>
#include <filesystem>

#include "dataset/coco/coco.h"
#include "eval/results_json.h"
#include "io/atomic_file.h"
#include "review/mistakes_json.h"
#include "tests/common/files.h"
#include "ui/common/image_view.h"
#include "ui/label_review/label_review.h"
#include "ui/spec_editor/spec_editor.h"

using mrcnn::review::Annotation;
using mrcnn::review::AnnotationSet;
using mrcnn::review::Decision;
using mrcnn::review::Mistake;
using mrcnn::review::MistakeKind;
using mrcnn::ui::LabelReview;

namespace {

// A file's bytes (tests/common/files.h) as Qt compares them.
QByteArray bytesOf(const QString& path) {
  return QByteArray::fromStdString(mrcnn::testing::readAll(path.toStdString()));
}

QString shared() { return qEnvironmentVariable("MRCNN_SHARED_DIR") + "/data/tinycoco"; }

}  // namespace

class LabelReviewTest : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString annotations_, mistakes_;
  QByteArray original_;
  int64_t wrong_ = 0, spurious_ = 0, duplicate_ = 0, loose_ = 0, image_ = 0;
  int64_t other_category_ = 0;

 private slots:
  void initTestCase() {
    if (!QFile::exists(shared() + "/annotations/instances_val2017.json"))
      QSKIP("tinycoco is not there (MRCNN_SHARED_DIR)");
    annotations_ = dir_.filePath("val.json");
    QVERIFY(QFile::copy(shared() + "/annotations/instances_val2017.json", annotations_));
    original_ = bytesOf(annotations_);
    // Four annotations of one image, and a finding of each kind on them.
    const auto coco = mrcnn::dataset::loadCoco(annotations_.toStdString());
    const AnnotationSet set = AnnotationSet::open(annotations_.toStdString());
    image_ = coco.images()[0].id;
    std::vector<const Annotation*> on = set.ofImage(image_);
    std::erase_if(on, [](const Annotation* a) { return a->iscrowd || a->polygons.empty(); });
    QVERIFY(on.size() >= 4);
    wrong_ = on[0]->id;
    spurious_ = on[1]->id;
    duplicate_ = on[2]->id;
    loose_ = on[3]->id;
    for (const auto& c : coco.categories())
      if (c.id != on[0]->category_id) other_category_ = c.id;
    mrcnn::review::MistakesFile file;
    file.annotations = annotations_.toStdString();
    file.image_dir = (shared() + "/images/val2017").toStdString();
    const auto [h, w] = mrcnn::eval::imageSizes(coco).at(image_);
    Mistake missing{image_, std::nullopt, MistakeKind::kMissing, 0.95, mrcnn::review::Suggestion{}, "a detection no annotation covers"};
    missing.suggestion->category_id = other_category_;
    missing.suggestion->bbox = {2, 2, 20, 16};
    missing.suggestion->mask = mrcnn::dataset::rleFromBbox({2, 2, 20, 16}, h, w);
    Mistake wrong{image_, wrong_, MistakeKind::kWrongClass, 0.9, mrcnn::review::Suggestion{other_category_, on[0]->bbox, std::nullopt}, "another class"};
    Mistake spurious{image_, spurious_, MistakeKind::kSpurious, 0.8, std::nullopt, "nothing there"};
    Mistake duplicate{image_, duplicate_, MistakeKind::kDuplicate, 0.7, std::nullopt, "twice"};
    Mistake loose{image_, loose_, MistakeKind::kLocalization, 0.6, mrcnn::review::Suggestion{on[3]->category_id, {30, 30, 10, 10}, mrcnn::dataset::rleFromBbox({30, 30, 10, 10}, h, w)}, "moved"};
    file.mistakes = {missing, wrong, spurious, duplicate, loose};
    mistakes_ = dir_.filePath("mistakes.json");
    mrcnn::io::writeFileAtomic(mistakes_.toStdString(), mrcnn::review::mistakesJson(file));
  }

  void reviewFromTheKeyboardIsJournalledAndResumes() {
    int64_t added = 0;
    {
      LabelReview review;
      review.resize(1000, 700);
      review.show();
      QVERIFY(QTest::qWaitForWindowExposed(&review));
      review.activateWindow();
      QVERIFY(QTest::qWaitForWindowActive(&review));
      QSignalSpy shown(&review, &LabelReview::imageShown);
      QString error;
      QVERIFY2(review.openMistakes(mistakes_, {}, &error), qPrintable(error));
      QCOMPARE(review.list()->topLevelItemCount(), 5);
      QCOMPARE(review.current(), 0);  // the first finding, shown
      review.list()->setFocus();
      QVERIFY(shown.wait(10000));
      QVERIFY(!review.imageView()->image().isNull());
      // The image's annotations, the finding's... and the suggestion drawn beside them.
      QCOMPARE(review.imageView()->instances().size(), review.annotations()->ofImage(image_).size() + 1);

      const size_t before = review.annotations()->annotations().size();
      QTest::keyClick(review.list(), Qt::Key_A);  // missing: the instance is added
      QCOMPARE(review.annotations()->annotations().size(), before + 1);
      added = review.annotations()->annotations().back().id;
      QCOMPARE(review.annotations()->find(added)->category_id, other_category_);
      QCOMPARE(review.current(), 1);
      QTest::keyClick(review.list(), Qt::Key_A);  // wrong class: the class changes
      QCOMPARE(review.annotations()->find(wrong_)->category_id, other_category_);
      QTest::keyClick(review.list(), Qt::Key_R);  // spurious: rejected, kept
      QVERIFY(review.annotations()->find(spurious_));
      QTest::keyClick(review.list(), Qt::Key_A);  // duplicate: deleted
      QVERIFY(!review.annotations()->find(duplicate_));
      QCOMPARE(review.current(), 4);
      QCOMPARE(*review.decision(2), Decision::kRejected);
      QVERIFY(!review.decision(4));

      // The kind filter shows one kind only.
      const int k = review.kindFilter()->findText("localization");
      QVERIFY(k > 0);
      review.kindFilter()->setCurrentIndex(k);
      QCOMPARE(review.list()->topLevelItemCount(), 1);
      review.kindFilter()->setCurrentIndex(0);
      QCOMPARE(review.list()->topLevelItemCount(), 5);
    }  // closed without saving: the journal has it all
    QCOMPARE(bytesOf(annotations_), original_);

    LabelReview again;
    again.show();
    again.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&again));
    QVERIFY(again.openMistakes(mistakes_));
    again.list()->setFocus();
    QCOMPARE(again.current(), 4);  // resumes at the first finding without a decision
    QCOMPARE(*again.decision(0), Decision::kAccepted);
    QVERIFY(again.annotations()->find(added));
    QVERIFY(!again.annotations()->find(duplicate_));
    QTest::keyClick(again.list(), Qt::Key_A);  // localization: the model's box and shape
    const Annotation* loose = again.annotations()->find(loose_);
    QCOMPARE(loose->bbox[0], 30.0);
    QVERIFY(!loose->polygons.empty());
    QString error;
    const QString saved = again.saveReviewed(&error);
    QVERIFY2(!saved.isEmpty(), qPrintable(error));
    QCOMPARE(saved, dir_.filePath("val.reviewed.json"));
    QCOMPARE(bytesOf(annotations_), original_);
    const auto reviewed = mrcnn::dataset::loadCoco(saved.toStdString());
    QCOMPARE(reviewed.annotations().size(), mrcnn::dataset::loadCoco(annotations_.toStdString()).annotations().size());  // +1 -1

    // Use in Spec: the spec that trains on the original now names the reviewed copy.
    QSignalSpy use(&again, &LabelReview::useInSpec);
    QVERIFY(again.useInSpecButton()->isEnabled());
    QTest::mouseClick(again.useInSpecButton(), Qt::LeftButton);
    QCOMPARE(use.size(), 1);
    QCOMPARE(QFileInfo(use.first().at(0).toString()).absoluteFilePath(), QFileInfo(annotations_).absoluteFilePath());
    mrcnn::ui::SpecEditor editor;
    editor.setText("data_config {\n  train_json_file: \"" + annotations_ +
                   "\"\n  val_json_file: \"/elsewhere/val.json\"\n}\n");
    const QStringList fields = editor.replaceAnnotationFile(use.first().at(0).toString(), use.first().at(1).toString());
    QCOMPARE(fields, QStringList{"data_config.train_json_file"});
    QVERIFY2(editor.text().contains("train_json_file: \"" + saved + "\""), qPrintable(editor.text()));
    QVERIFY(editor.text().contains("val_json_file: \"/elsewhere/val.json\""));
  }

  // The view as the README shows it: a wrong-class finding on a real photo, its annotation
  // highlighted, the list of findings beside it (MRCNN_WRITE_SCREENSHOTS=DIR keeps the PNG).
  void screenshot() {
    QTemporaryDir shot;
    const QString copy = shot.filePath("val.json");
    QVERIFY(QFile::copy(shared() + "/annotations/instances_val2017.json", copy));
    mrcnn::review::MistakesFile file = mrcnn::review::readMistakesJson(mistakes_.toStdString());
    file.annotations = copy.toStdString();
    const QString path = shot.filePath("mistakes.json");
    mrcnn::io::writeFileAtomic(path.toStdString(), mrcnn::review::mistakesJson(file));
    LabelReview review;
    review.resize(1400, 820);
    review.show();
    QVERIFY(QTest::qWaitForWindowExposed(&review));
    QSignalSpy shown(&review, &LabelReview::imageShown);
    QVERIFY(review.openMistakes(path));
    QVERIFY(shown.wait(10000));
    review.select(1);
    QVERIFY(shown.wait(10000));
    QTest::qWait(100);
    const QImage image = review.grab().toImage();
    QCOMPARE(image.size(), QSize(1400, 820));
    const QString out_dir = qEnvironmentVariable("MRCNN_WRITE_SCREENSHOTS");
    const QString png = out_dir.isEmpty() ? shot.filePath("label_review.png")
                                          : QDir(out_dir).filePath("label_review.png");
    QVERIFY(image.save(png));
    if (!out_dir.isEmpty()) qInfo("screenshot: %s", qPrintable(png));
  }

  void aBadFileIsNamed() {
    LabelReview review;
    const QString bad = dir_.filePath("bad.json");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"annotations\": \"nowhere.json\", \"results\": null, \"mistakes\": []}");
    f.close();
    QString error;
    QVERIFY(!review.openMistakes(bad, {}, &error));
    QVERIFY2(error.contains("nowhere.json"), qPrintable(error));
    QCOMPARE(review.statusText(), error);
  }
};

QTEST_MAIN(LabelReviewTest)
#include "test_label_review.moc"

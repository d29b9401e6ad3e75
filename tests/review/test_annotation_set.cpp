// The review's editable annotation file (review/annotation_set.h) on tinycoco's real
// annotations: edits and decisions journalled as they are made, replayed on reopening (also
// after the editing process was killed), a journal cut short by a crash losing only its last
// line, the original never written, the corrected copy beside it with untouched annotations
// as they were written.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QCryptographicHash>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "dataset/coco/coco.h"
#include "review/annotation_set.h"
#include "tests/common/files.h"

using mrcnn::review::Annotation;
using mrcnn::review::AnnotationSet;
using mrcnn::review::Decision;

namespace {

// A file's bytes (tests/common/files.h) as Qt compares them.
QByteArray bytesOf(const QString& path) {
  return QByteArray::fromStdString(mrcnn::testing::readAll(path.toStdString()));
}

// The edits every test makes: a vertex moved, an annotation deleted, one added, a decision.
struct Edits {
  int64_t moved = 0, removed = 0, added = 0;
};

Edits edit(AnnotationSet& set) {
  Edits e;
  const std::vector<Annotation> all = set.annotations();  // a change rebuilds the list
  for (const Annotation& a : all) {
    if (a.polygons.empty() || a.iscrowd) continue;
    if (e.moved == 0) {
      Annotation after = a;
      after.polygons[0][0] += 5;
      after.polygons[0][1] -= 3;
      set.update(after);
      e.moved = a.id;
    } else {
      set.remove(a.id);
      e.removed = a.id;
      break;
    }
  }
  Annotation fresh;
  fresh.image_id = set.annotations().front().image_id;
  fresh.category_id = set.annotations().front().category_id;
  fresh.polygons = {{10, 10, 40, 10, 40, 30, 10, 30}};
  fresh.bbox = {10, 10, 30, 20};
  fresh.area = 600;
  fresh.extra = "\"score\":0.75";
  e.added = set.add(fresh).id;
  set.decide("42/7/missing", Decision::kAccepted);
  set.decide("42/8/spurious", Decision::kRejected);
  return e;
}

void checkEdited(const AnnotationSet& set, const Edits& e, const AnnotationSet& original) {
  QCOMPARE(set.annotations().size(), original.annotations().size());  // -1 +1
  const Annotation* moved = set.find(e.moved);
  QVERIFY(moved);
  QCOMPARE(moved->polygons[0][0], original.find(e.moved)->polygons[0][0] + 5);
  QCOMPARE(moved->polygons[0][1], original.find(e.moved)->polygons[0][1] - 3);
  QVERIFY(!set.find(e.removed));
  QVERIFY(set.find(e.added));
  QCOMPARE(set.find(e.added)->extra, std::string("\"score\":0.75"));
  QCOMPARE(set.decisions().at("42/7/missing"), Decision::kAccepted);
  QCOMPARE(set.decisions().at("42/8/spurious"), Decision::kRejected);
  QCOMPARE(set.changes(), size_t{3});
}

}  // namespace

class AnnotationSetTest : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString file_;
  QByteArray original_;

 private slots:
  void init() {
    file_ = dir_.filePath("val.json");
    QFile::remove(file_);
    QFile::remove(dir_.filePath("val.changes.jsonl"));
    QFile::remove(dir_.filePath("val.reviewed.json"));
    QVERIFY(QFile::copy(qEnvironmentVariable("MRCNN_SHARED_DIR") +
                            "/data/tinycoco/annotations/instances_val2017.json",
                        file_));
    original_ = bytesOf(file_);
  }

  void editsAreJournalledAndReplayed() {
    const AnnotationSet untouched = AnnotationSet::open(file_.toStdString());
    QCOMPARE(untouched.annotations().size(), size_t{136});
    Edits e;
    {
      AnnotationSet set = AnnotationSet::open(file_.toStdString());
      e = edit(set);
      checkEdited(set, e, untouched);
    }
    QCOMPARE(bytesOf(file_), original_);  // the original is never written
    QCOMPARE(bytesOf(dir_.filePath("val.changes.jsonl")).count('\n'), 5);
    const AnnotationSet again = AnnotationSet::open(file_.toStdString());
    checkEdited(again, e, untouched);
    QVERIFY(again.journalWarning().empty());
    QVERIFY(again.edited(e.moved) && !again.edited(untouched.annotations().back().id));
  }

  // The editing process killed (SIGKILL, no destructor, no save): every change it made is
  // there when the file is opened again.
  void aKilledEditorsChangesAreReplayed() {
    const AnnotationSet untouched = AnnotationSet::open(file_.toStdString());
    int fds[2];
    QVERIFY(::pipe(fds) == 0);
    const pid_t child = ::fork();
    if (child == 0) {
      ::close(fds[0]);
      AnnotationSet set = AnnotationSet::open(file_.toStdString());
      const Edits e = edit(set);
      const int64_t ids[3] = {e.moved, e.removed, e.added};
      if (::write(fds[1], ids, sizeof ids) != static_cast<ssize_t>(sizeof ids)) ::_exit(3);
      ::raise(SIGKILL);
    }
    ::close(fds[1]);
    int64_t ids[3] = {};
    QCOMPARE(::read(fds[0], ids, sizeof ids), static_cast<ssize_t>(sizeof ids));
    ::close(fds[0]);
    int status = 0;
    QCOMPARE(::waitpid(child, &status, 0), child);
    QVERIFY(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    const AnnotationSet reopened = AnnotationSet::open(file_.toStdString());
    checkEdited(reopened, Edits{ids[0], ids[1], ids[2]}, untouched);
  }

  // A crash in the middle of writing a line loses that line only; a journal damaged in the
  // middle, or one of another file, is refused with its line named.
  void aCutLastLineIsDroppedAndABadJournalNamed() {
    const AnnotationSet untouched = AnnotationSet::open(file_.toStdString());
    Edits e;
    {
      AnnotationSet set = AnnotationSet::open(file_.toStdString());
      e = edit(set);
    }
    const QString journal = dir_.filePath("val.changes.jsonl");
    const QByteArray whole = bytesOf(journal);
    {
      QFile f(journal);
      QVERIFY(f.open(QIODevice::Append));
      f.write("{\"op\":\"update\",\"after\":{\"id\":");  // cut short, no newline
    }
    const AnnotationSet cut = AnnotationSet::open(file_.toStdString());
    checkEdited(cut, e, untouched);
    QVERIFY2(QString::fromStdString(cut.journalWarning()).contains("line 6 was cut short"),
             cut.journalWarning().c_str());

    QList<QByteArray> lines = whole.split('\n');
    lines[1] = "not json";
    QFile bad(journal);
    QVERIFY(bad.open(QIODevice::WriteOnly | QIODevice::Truncate));
    bad.write(lines.join('\n'));
    bad.close();
    try {
      AnnotationSet::open(file_.toStdString());
      QFAIL("a damaged journal was read");
    } catch (const std::exception& ex) {
      QVERIFY2(QString(ex.what()).contains("val.changes.jsonl: line 2: not a JSON object"), ex.what());
    }
    QVERIFY(bad.open(QIODevice::WriteOnly | QIODevice::Truncate));
    bad.write("{\"op\":\"delete\",\"before\":{\"id\":987654321,\"image_id\":1,\"category_id\":1}}\n");
    bad.close();
    try {
      AnnotationSet::open(file_.toStdString());
      QFAIL("another file's journal was read");
    } catch (const std::exception& ex) {
      QVERIFY2(QString(ex.what()).contains("line 1: no annotation 987654321 (the journal is not this file's)"),
               ex.what());
    }
  }

  // Save: the corrected copy beside the original, which our COCO reader takes; annotations
  // nobody touched are copied byte for byte.
  void theReviewedCopyHasTheEditsAndKeepsTheRest() {
    Edits e;
    AnnotationSet set = AnnotationSet::open(file_.toStdString());
    e = edit(set);
    const auto saved = set.saveReviewed();
    QCOMPARE(QString::fromStdString(saved.string()), dir_.filePath("val.reviewed.json"));
    QCOMPARE(bytesOf(file_), original_);
    const mrcnn::dataset::CocoDataset coco = mrcnn::dataset::loadCoco(saved);
    QCOMPARE(coco.annotations().size(), size_t{136});
    QCOMPARE(coco.images().size(), size_t{6});
    QCOMPARE(coco.categories().size(), size_t{80});
    bool moved = false, added = false, removed = false;
    for (const auto& a : coco.annotations()) {
      moved |= a.id == e.moved;
      added |= a.id == e.added;
      removed |= a.id == e.removed;
    }
    QVERIFY(moved && added && !removed);
    const QByteArray reviewed = bytesOf(QString::fromStdString(saved.string()));
    QVERIFY(reviewed.contains("\"score\":0.75"));
    // An annotation no edit touched: its text in the copy is the original's.
    const Annotation& last = set.annotations()[set.annotations().size() - 2];
    QVERIFY(!set.edited(last.id));
    // (tinycoco writes `"id": N}` with a space, as Python's json does; a rewritten one would not)
    const QByteArray marker = "\"id\": " + QByteArray::number(static_cast<qlonglong>(last.id)) + "}";
    QVERIFY2(original_.contains(marker) && reviewed.contains(marker), marker.constData());
    const Annotation* moved_now = set.find(e.moved);
    QVERIFY(reviewed.contains(QByteArray::fromStdString(moved_now->json())));
  }
};

QTEST_GUILESS_MAIN(AnnotationSetTest)
#include "test_annotation_set.moc"

// Resuming with changed settings: a run trained 4 steps is resumed with another learning rate,
// schedule and total_steps. The start event lists exactly the changed fields with their old
// and new values, the new schedule applies from the resumed step on (the lr the progress
// events report), the spec as run until then is kept beside the new spec.txt, and the next
// resume from RUN/spec.txt starts from the new values. A change to the model's shape or the
// classes is refused before anything is loaded or written, naming each field. The real
// engine on the embedded shapes dataset, small enough for 2 cores (~15 s).
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <map>
#include <string>
#include <vector>

#include "specs/events.h"

namespace {

using mrcnn::events::Event;

QString engine() { return qEnvironmentVariable("MRCNN_BIN_DIR") + "/mrcnn-engine"; }

struct Run {
  int code = -1;
  QString err;
  std::vector<Event> events;  // stdout's, one a line
};

Run runEngine(const QStringList& args) {
  QProcess p;
  p.start(engine(), args);
  Run r;
  if (!p.waitForFinished(300000)) {
    p.kill();
    p.waitForFinished();
    r.err = "timed out";
    return r;
  }
  r.code = p.exitCode();
  r.err = QString::fromUtf8(p.readAllStandardError());
  for (const QByteArray& line : p.readAllStandardOutput().split('\n')) {
    if (line.trimmed().isEmpty()) continue;
    if (auto e = mrcnn::events::parseJsonLine(line.toStdString())) r.events.push_back(*e);
  }
  return r;
}

const Event* first(const Run& r, const char* type) {
  for (const Event& e : r.events)
    if (e.type() == type) return &e;
  return nullptr;
}

// The lr each progress event reports, by step.
std::map<uint64_t, double> lrs(const Run& r) {
  std::map<uint64_t, double> out;
  for (const Event& e : r.events)
    if (e.type() == "progress") out[e.step()] = e.lr();
  return out;
}

QString readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

}  // namespace

class ResumeChangesTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  QStringList args(const QString& spec, const QStringList& extra) const {
    const QStringList sets = {
        "device=cpu", "seed=7", "save_checkpoints_steps=2", "num_steps_per_eval=100",
        "train_batch_size=2", "eval_batch_size=2", "target_bbox_map=0", "target_segm_map=0",
        "logging_frequency=1", "warmup_steps=0",
        "data_config.shapes_dataset.root=" + dir_.filePath("data"),
        "data_config.shapes_dataset.train_images=8", "data_config.shapes_dataset.val_images=2",
        "data_config.shapes_dataset.min_side=96", "data_config.shapes_dataset.max_side=128",
        "data_config.image_size=(128, 128)", "data_config.eval_samples=0",
        "maskrcnn_config.nlayers=10", "maskrcnn_config.train_rpn_pre_nms_topn=300",
        "maskrcnn_config.train_rpn_post_nms_topn=100"};
    QStringList a = {"--spec", spec, "--task", "train", "--run-dir", dir_.filePath("run")};
    for (const QString& s : sets + extra) a << "--set" << s;
    return a;
  }
  QString shapesSpec() const {
    return qEnvironmentVariable("MRCNN_SOURCE_DIR") + "/specs/shapes_resnet18.txt";
  }

 private slots:
  void changesApplyAndAreListed() {
    QVERIFY(dir_.isValid());
    const QStringList schedule = {"init_learning_rate=0.004", "learning_rate_steps=[100]",
                                  "learning_rate_decay_levels=[0.1]"};
    const Run fresh = runEngine(args(shapesSpec(), schedule + QStringList{"total_steps=4"}));
    QVERIFY2(fresh.code == 0, qPrintable(fresh.err));
    QVERIFY(first(fresh, "start") && first(fresh, "start")->spec_changes_size() == 0);
    for (const auto& [step, lr] : lrs(fresh)) QCOMPARE(lr, 0.004);
    const QString spec_txt = dir_.filePath("run/spec.txt");
    const QString before = readAll(spec_txt);
    QVERIFY(before.contains("init_learning_rate: 0.004"));

    // Another rate, a decay from the sixth step on (the steps are counted from 0 there) and
    // two more steps.
    const Run resumed = runEngine(args(
        shapesSpec(), {"init_learning_rate=0.002", "learning_rate_steps=[4]",
                       "learning_rate_decay_levels=[0.1]", "total_steps=6"}));
    QVERIFY2(resumed.code == 0, qPrintable(resumed.err));
    const Event* start = first(resumed, "start");
    QVERIFY(start);
    QCOMPARE(start->start_step(), uint64_t{4});
    std::map<std::string, std::pair<std::string, std::string>> changes;
    for (const auto& c : start->spec_changes()) changes[c.field()] = {c.before(), c.after()};
    const std::map<std::string, std::pair<std::string, std::string>> expected = {
        {"init_learning_rate", {"0.004", "0.002"}},
        {"learning_rate_steps", {"\"[100]\"", "\"[4]\""}},
        {"total_steps", {"4", "6"}}};
    QCOMPARE(changes, expected);
    const std::map<uint64_t, double> after = lrs(resumed);
    QCOMPARE(after.size(), size_t{2});
    QCOMPARE(after.at(5), 0.002);            // the new rate from the resumed step
    QCOMPARE(after.at(6), 0.002 * 0.1);      // and the new decay
    // The spec as run until step 4 kept; spec.txt is the new one; the log says what changed.
    QCOMPARE(readAll(dir_.filePath("run/spec.before-step-4.txt")), before);
    QVERIFY(readAll(spec_txt).contains("init_learning_rate: 0.002"));
    const QString log = readAll(dir_.filePath("run/log.txt"));
    QVERIFY2(log.contains("init_learning_rate: 0.004 -> 0.002"), qPrintable(log));

    // Resumed from the run's own spec.txt with one more change: only that one is listed, and
    // the rate is the one it now holds.
    const Run again = runEngine(args(spec_txt, {"total_steps=7"}));
    QVERIFY2(again.code == 0, qPrintable(again.err));
    QVERIFY(first(again, "start"));
    QCOMPARE(first(again, "start")->spec_changes_size(), 1);
    QCOMPARE(first(again, "start")->spec_changes(0).field(), std::string("total_steps"));
    QCOMPARE(lrs(again).at(7), 0.002 * 0.1);
  }

  // The model's shape and the classes cannot change under a checkpoint: refused with each
  // field named, exit 3 (a bad spec), nothing written.
  void shapeChangesAreRefused() {
    const QString spec_txt = dir_.filePath("run/spec.txt");
    const QString before = readAll(spec_txt);
    QVERIFY(!before.isEmpty());
    const QStringList checkpoints =
        QDir(dir_.filePath("run/checkpoints")).entryList(QDir::Files, QDir::Name);
    const Run refused =
        runEngine(args(spec_txt, {"total_steps=9", "maskrcnn_config.nlayers=18",
                                  "data_config.num_classes=3"}));
    QCOMPARE(refused.code, 3);
    const Event* error = first(refused, "error");
    QVERIFY(error);
    QCOMPARE(error->code(), std::string("spec_changed_at_resume"));
    const QString message = QString::fromStdString(error->message());
    QVERIFY2(message.contains("maskrcnn_config.nlayers: 10 -> 18 changes the model's shape") &&
                 message.contains("data_config.num_classes: 5 -> 3 changes the classes") &&
                 !message.contains("total_steps") && message.contains("--run-dir"),
             qPrintable(message));
    QVERIFY(!first(refused, "progress"));
    QCOMPARE(readAll(spec_txt), before);
    QCOMPARE(QDir(dir_.filePath("run/checkpoints")).entryList(QDir::Files, QDir::Name), checkpoints);
  }
};

QTEST_GUILESS_MAIN(ResumeChangesTest)
#include "test_resume_changes.moc"

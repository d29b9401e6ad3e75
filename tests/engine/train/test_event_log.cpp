// The run's readable log (engine/events/event_writer.h): log.txt beside events.jsonl, every
// event as timestamped text, written with the same guarantees as events.jsonl (appended, one
// write per event, never a torn line); log events are lines without a trailing newline.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "engine/events/event_writer.h"
#include "specs/events.h"
#include "tests/common/files.h"

namespace fs = std::filesystem;
namespace train = mrcnn::train;
namespace events = mrcnn::events;

namespace {

using mrcnn::testing::readAll;

long lineCount(const std::string& text) {
  return std::count(text.begin(), text.end(), '\n');
}

}  // namespace

class EventLogTest : public QObject {
  Q_OBJECT
 private slots:
  void logTxtBesideTheEventsWithATimestampedLinePerEvent() {
    QTemporaryDir dir;
    const fs::path root(dir.path().toStdString());
    {
      train::EventWriter writer({root / "events.jsonl", -1, 0});
      QCOMPARE(writer.logFile(), root / "log.txt");
      writer.write(
          train::startEvent("train", "runs/a/spec.txt", "runs/a", "cpu", 1, 200, 0, "0.1"));
      train::ProgressInfo p;
      p.step = 20;
      p.epoch = 1;
      p.lr = 0.02;
      p.loss_total = 1.5;
      p.loss_rpn_objectness = 0.125;
      p.images_per_second = 4.25;
      p.eta_seconds = 3723;
      writer.write(train::progressEvent(p));
      writer.write(train::logEvent("shapes dataset generated\nin 2 s\n"));
      writer.write(train::doneEvent("ok", "step 200 of 200", 100));
    }
    const std::string log = readAll(root / "log.txt");
    QCOMPARE(lineCount(log), 5L);  // the log event's two lines are two lines, each stamped
    const QRegularExpression line(R"(^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}  (.*)$)");
    QStringList texts;
    for (const QString& l : QString::fromStdString(log).split('\n', Qt::SkipEmptyParts)) {
      const auto m = line.match(l);
      QVERIFY2(m.hasMatch(), qPrintable(l));
      texts << m.captured(1);
    }
    QCOMPARE(texts[0], QString("start train on cpu: 200 steps; spec runs/a/spec.txt; run directory "
                               "runs/a; engine 0.1"));
    QCOMPARE(texts[1], QString("step 20/200  epoch 1  lr 0.02  loss 1.5000 (rpn_objectness 0.1250, "
                               "rpn_box 0.0000, fast_rcnn_class 0.0000, fast_rcnn_box 0.0000, "
                               "mask 0.0000)  4.25 img/s  ETA 1h02m03s"));
    QCOMPARE(texts[2], QString("shapes dataset generated"));
    QCOMPARE(texts[3], QString("in 2 s"));
    QCOMPARE(texts[4], QString("done: ok after 1m40s: step 200 of 200"));

    // events.jsonl: the log event's text lost its trailing newline (a line, not a line and an
    // empty one).
    const std::string jsonl = readAll(root / "events.jsonl");
    QCOMPARE(lineCount(jsonl), 4L);
    QVERIFY(jsonl.find(R"("text":"shapes dataset generated\nin 2 s")") != std::string::npos);

    // Appends: a second writer (a resumed run, another task) keeps what is there.
    {
      train::EventWriter again({root / "events.jsonl", -1, 0});
      again.write(train::warningEvent("corrupt_image", "images/7.jpg: cannot decode", 7, 0));
    }
    const std::string after = readAll(root / "log.txt");
    QVERIFY(after.starts_with(log));
    QVERIFY(after.ends_with("  warning [corrupt_image]: images/7.jpg: cannot decode (image 7)\n"));

    // No readable log when asked, or without a file to put it beside.
    const fs::path other = root / "other";
    fs::create_directories(other);
    train::EventWriterOptions off{other / "events.jsonl", -1, 0};
    off.text_log = false;
    train::EventWriter quiet(off);
    quiet.write(train::logEvent("x"));
    QVERIFY(!fs::exists(other / "log.txt"));
  }

  void eachEventTypeReadsAsText() {
    train::CocoSummary bbox{{0.5123, 0.8, 0.6, -1, 0.4, 0.55, 0.3, 0.5, 0.6, -1, 0.45, 0.65},
                            {{1, 0.7}, {3, -1}},
                            {{1, "circle"}, {3, "star"}}};
    train::CocoSummary segm{
        {0.4, 0.7, 0.45, -1, 0.3, 0.5, 0.2, 0.4, 0.5, -1, 0.4, 0.6}, {{1, 0.65}, {3, -1}}, {}};
    QCOMPARE(train::eventText(train::evalEvent(100, 50, bbox, &segm, "eval/step-100.json")),
             std::string("eval at step 100 on 50 images: bbox AP 0.512 AP50 0.800 AP75 0.600; "
                         "segm AP 0.400 AP50 0.700 AP75 0.450; metrics eval/step-100.json\n"
                         "  AP per category (bbox/segm): circle 0.700/0.650 star -/-"));
    QCOMPARE(train::eventText(train::checkpointEvent("c/model.step-100.pt", 100, true)),
             std::string("checkpoint at step 100: c/model.step-100.pt (best so far)"));
    QCOMPARE(train::eventText(train::errorEvent("nan_loss", "the mask loss is not finite", 1)),
             std::string("error [nan_loss]: the mask loss is not finite (exit code 1)"));
    // A task counting images: no losses, "images" done of the start event's total.
    QCOMPARE(train::eventText(train::itemProgressEvent(3, 2.5, 2.8), "inference", 10),
             std::string("images 3/10  2.50 img/s  ETA 3s"));
    QCOMPARE(train::eventText(train::startEvent("inference", "s.txt", "", "cpu", 1, 10, 0, "")),
             std::string("start inference on cpu: 10 images; spec s.txt"));
    // Resuming.
    QCOMPARE(train::eventText(train::startEvent("train", "", "", "cuda:0", 2, 300, 120, "")),
             std::string("start train on cuda:0 (2 processes): resuming at step 120 of 300"));
    // A log event built elsewhere, with a trailing newline, still reads as its line.
    events::Event raw;
    raw.set_type("log");
    raw.set_text("text\n");
    QCOMPARE(train::eventText(raw), std::string("text"));
  }

  void aFullLogNeverLeavesATornLineAndIsNamed() {
    // log.txt is already past the file size limit (RLIMIT_FSIZE makes write(2) fail there, as a
    // full disk does) while events.jsonl has room: the event goes to events.jsonl, log.txt is
    // left as it was, and the error names log.txt. In a child, so the limit stays there.
    QTemporaryDir dir;
    const fs::path root(dir.path().toStdString());
    const std::string filler(8192, 'x');
    { std::ofstream(root / "log.txt") << filler << '\n'; }
    const pid_t pid = ::fork();
    QVERIFY(pid >= 0);
    if (pid == 0) {
      ::signal(SIGXFSZ, SIG_IGN);
      train::EventWriter writer({root / "events.jsonl", -1, 0});
      rlimit limit{};
      ::getrlimit(RLIMIT_FSIZE, &limit);
      limit.rlim_cur = 4096;
      ::setrlimit(RLIMIT_FSIZE, &limit);
      try {
        writer.write(train::logEvent("a line"));
        ::_exit(2);  // no error reported
      } catch (const std::runtime_error& e) {
        // The message names the folder first, then the file in it.
        const std::string what = e.what();
        if (what.find(root.string() + ": ") != 0 || what.find("log.txt") == std::string::npos)
          ::_exit(3);
      }
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    QVERIFY(WIFEXITED(status));
    QCOMPARE(WEXITSTATUS(status), 0);
    QCOMPARE(readAll(root / "log.txt"), filler + '\n');
    QCOMPARE(lineCount(readAll(root / "events.jsonl")), 1L);
  }
};

QTEST_GUILESS_MAIN(EventLogTest)
#include "test_event_log.moc"

// The headless launcher without the real engine: the terminal rendering of the engine's
// events (app/event_render.h) fed event lines, and mrcnn-workbench --headless in front of
// stand-in engines (MRCNN_ENGINE scripts): exit codes and signals passed on, events rendered
// for a pipe and, under a pseudo-terminal, the loss lines at the spec's report_frequency.
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QRegularExpression>
#include <QtTest>
#include <cerrno>
#include <string>
#include <vector>

#include "app/event_render.h"
#include "specs/events.h"
#include "tests/common/process_run.h"

namespace {

using mrcnn::testing::binDir;
using mrcnn::testing::headless;
using mrcnn::testing::Run;
using mrcnn::testing::writeFile;

std::string progressLine(uint64_t step, double total_loss, double time) {
  mrcnn::events::Event e;
  e.set_type("progress");
  e.set_time(time);
  e.set_step(step);
  e.set_epoch(1);
  e.set_lr(0.02);
  e.set_images_per_second(4.25);
  e.set_eta_seconds(3723);
  auto* l = e.mutable_losses();
  l->set_total(total_loss);
  l->set_rpn_objectness(0.125);
  l->set_rpn_box(0.0625);
  l->set_fast_rcnn_class(0.25);
  l->set_fast_rcnn_box(0.5);
  l->set_mask(0.75);
  return mrcnn::events::toJsonLine(e);
}

std::string startLine() {
  mrcnn::events::Event e;
  e.set_type("start");
  e.set_time(1000);
  e.set_task("train");
  e.set_device("cpu");
  e.set_total_steps(200);
  e.set_run_dir("runs/shapes");
  return mrcnn::events::toJsonLine(e);
}

std::string evalLine() {
  mrcnn::events::Event e;
  e.set_type("eval");
  e.set_step(100);
  e.set_images(50);
  e.set_metrics_path("eval/step-100.json");
  const double bbox[12] = {0.512, 0.8, 0.6, -1, 0.4, 0.55, 0.3, 0.5, 0.6, -1, 0.45, 0.65};
  for (double v : bbox) {
    e.mutable_bbox()->add_stats(v);
    e.mutable_segm()->add_stats(v == -1 ? -1 : v - 0.1);
  }
  (*e.mutable_bbox()->mutable_per_category_ap())[3] = 0.7;
  (*e.mutable_bbox()->mutable_category_names())[3] = "star";
  (*e.mutable_segm()->mutable_per_category_ap())[3] = 0.65;
  return mrcnn::events::toJsonLine(e);
}

// Runs the launcher with `args` under a pseudo-terminal of 100 columns (its stdout is a tty),
// the engine being `engine`; returns what the terminal received, or an empty string.
std::string underTerminal(const QStringList& args, const QString& engine) {
  const std::string workbench = (binDir() + "/mrcnn-workbench").toStdString();
  std::vector<std::string> argv_s{workbench, "--headless"};
  for (const QString& a : args)
    argv_s.push_back(a.toStdString());
  std::vector<char*> argv;
  for (std::string& a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string engine_s = engine.toStdString();

  winsize ws{};
  ws.ws_col = 100;
  ws.ws_row = 30;
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, &ws);
  if (pid < 0) return {};
  if (pid == 0) {
    ::setenv("MRCNN_ENGINE", engine_s.c_str(), 1);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EIO: the launcher and the engine closed the terminal
    }
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return out;
}

}  // namespace

class EventRenderTest : public QObject {
  Q_OBJECT

 private slots:
  // --- the launcher in front of stand-in engines -------------------------------------------
  void launcherPassesTheEngineExitCodeAndSignals() {
    QTemporaryDir dir;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("MRCNN_ENGINE", writeFile(dir, "exit7.sh", "#!/bin/sh\nexit 7\n", true));
    QCOMPARE(headless({"spec.txt"}, env).code, 7);

    env.insert("MRCNN_ENGINE", writeFile(dir, "killed.sh", "#!/bin/sh\nkill -9 $$\n", true));
    const Run killed = headless({"spec.txt"}, env);
    QCOMPARE(killed.code, 128 + 9);
    QVERIFY(killed.err.contains("killed by signal 9"));

    // SIGTERM to the launcher alone reaches the engine, which decides how to stop.
    env.insert("MRCNN_ENGINE", writeFile(dir, "graceful.sh",
                                         "#!/bin/sh\ntrap 'echo stopping; exit 0' TERM\n"
                                         "echo ready\nwhile true; do sleep 0.05; done\n",
                                         true));
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(binDir() + "/mrcnn-workbench", {"--headless", "spec.txt"});
    QVERIFY(p.waitForReadyRead(10000));
    ::kill(static_cast<pid_t>(p.processId()), SIGTERM);
    QVERIFY(p.waitForFinished(10000));
    QCOMPARE(p.exitCode(), 0);
    QVERIFY(QString::fromUtf8(p.readAllStandardOutput()).contains("stopping"));
  }

  // --- rendering ------------------------------------------------------------------------------
  void plainRenderingOfEveryEventType() {
    mrcnn::app::EventRenderer r({/*tty=*/false, 100, 10});
    QString out;
    const auto feed = [&](const std::string& line) { out += QString::fromStdString(r.line(line)); };
    feed(startLine());
    feed("shapes dataset up to date (450 images)");  // not an event: unchanged
    feed("{ not json at all");                       // not an event either
    feed(progressLine(20, 1.5, 1010));
    feed(evalLine());
    feed(
        R"({"v":1,"type":"checkpoint","time":1020,"path":"runs/shapes/checkpoints/model.step-100.pt","step":100,"best":true})");
    feed(
        R"({"v":1,"type":"warning","time":1021,"code":"corrupt_image","message":"images/7.jpg: cannot decode","imageId":"7"})");
    feed(
        R"({"v":1,"type":"error","time":1022,"code":"nan_loss","message":"step 120: loss mask is NaN","exitCode":1})");
    feed(R"({"v":1,"type":"log","time":1023,"text":"a log line"})");
    feed(
        R"({"v":1,"type":"done","time":1100,"status":"stopped","summary":"stopped at step 120","elapsedSeconds":100})");
    out += QString::fromStdString(r.finish(0));

    QVERIFY2(out.contains("train on cpu: 200 steps; run directory runs/shapes\n"), qPrintable(out));
    QVERIFY(out.contains("\nshapes dataset up to date (450 images)\n"));
    QVERIFY(out.contains("\n{ not json at all\n"));
    QVERIFY2(
        out.contains("step 20/200 (10%)  4.25 img/s  ETA 1h02m03s  lr 0.02  loss 1.5000  "
                     "(rpn_obj 0.1250  rpn_box 0.0625  cls 0.2500  box 0.5000  mask 0.7500)\n"),
        qPrintable(out));
    QVERIFY(out.contains("evaluation at step 100 on 50 images (eval/step-100.json)\n"));
    QVERIFY2(out.contains("  AP    IoU=0.50:0.95  area=all     maxDets=100   0.512   0.412\n"),
             qPrintable(out));
    QVERIFY(out.contains("  APs   IoU=0.50:0.95  area=small   maxDets=100       -       -\n"));
    QVERIFY(out.contains("  ARl   IoU=0.50:0.95  area=large   maxDets=100   0.650   0.550\n"));
    QVERIFY2(out.contains("  AP star" + QString(41, ' ') + "0.700   0.650\n"), qPrintable(out));
    QCOMPARE(out.count(QRegularExpression("\n  AR")), 6);
    QVERIFY(out.contains(
        "checkpoint at step 100: runs/shapes/checkpoints/model.step-100.pt  (best so far)\n"));
    QVERIFY(out.contains("warning: [corrupt_image] images/7.jpg: cannot decode (image 7)\n"));
    QVERIFY(out.contains("error: [nan_loss] step 120: loss mask is NaN\n"));
    QVERIFY(out.contains("\na log line\n"));
    QVERIFY2(out.contains("train stopped after 1m40s: step 20 of 200, loss 1.5000\n"
                          "  best bbox AP 0.512 (step 100), segm AP 0.412 (step 100)\n"
                          "  last checkpoint runs/shapes/checkpoints/model.step-100.pt\n"
                          "  1 warning, 1 error\n  stopped at step 120\n"),
             qPrintable(out));
    QVERIFY(!out.contains("\033"));  // no control codes off a terminal
    QVERIFY(!out.contains("\r"));
    QCOMPARE(r.warnings(), 1);
  }

  void terminalRenderingRedrawsTheBar() {
    mrcnn::app::EventRenderer r({/*tty=*/true, 100, 60});
    std::string out = r.line(startLine());
    std::vector<std::string> frames;
    for (int i = 1; i <= 7; ++i) {
      frames.push_back(r.line(progressLine(static_cast<uint64_t>(i * 20), 2.0 / i, 1000 + i)));
    }
    // Each progress event clears the line and redraws the bar, without a newline.
    for (const std::string& f : frames) {
      QVERIFY(f.rfind("\r\033[K") != std::string::npos);
      QVERIFY(f.back() != '\n');
    }
    const std::string first_bar = "step 20/200 [" + std::string(4, '#') + std::string(36, '.') +
                                  "]  10%  4.25 img/s  ETA 1h02m03s  loss 2.0000";
    QVERIFY2(frames[0].ends_with("\n" + first_bar), frames[0].c_str());
    QVERIFY2(frames[1].starts_with("\r\033[Kstep 40/200 ["), frames[1].c_str());  // in place
    QVERIFY2(frames[6].ends_with("step 140/200 [" + std::string(28, '#') + std::string(12, '.') +
                                 "]  70%  4.25 img/s  ETA 1h02m03s  loss 0.2857"),
             frames[6].c_str());
    // The loss components at the first progress event, then whenever the step passes a
    // multiple of 60 (report_frequency): steps 20, 60 and 120, as committed lines.
    std::vector<size_t> loss_lines;
    for (size_t i = 0; i < frames.size(); ++i)
      if (frames[i].find("(rpn_obj") != std::string::npos) loss_lines.push_back(i);
    QCOMPARE(loss_lines, (std::vector<size_t>{0, 2, 5}));
    QVERIFY(frames[2].find("\r\033[Kstep 60  lr 0.02  loss 0.6667  (rpn_obj") == 0);
    // Other text goes above the bar, which is drawn again under it.
    const std::string passthrough = r.line("some engine text");
    QVERIFY2(passthrough.starts_with("\r\033[Ksome engine text\n") &&
                 passthrough.ends_with("loss 0.2857"),
             passthrough.c_str());
    // Done commits the bar with a newline and prints the summary below it.
    const std::string done = r.line(R"({"v":1,"type":"done","time":1100,"status":"ok"})");
    QVERIFY2(done.starts_with("\ntrain finished after 1m40s: step 140 of 200"), done.c_str());
    QCOMPARE(r.finish(0), std::string());
  }

  void aWeightsDownloadHasItsOwnBarThenGivesWayToTheTasks() {
    const auto download = [](double time, uint64_t bytes, bool done) {
      std::string line = "{\"v\":1,\"type\":\"download\",\"time\":" + std::to_string(time);
      line += ",\"download\":{\"name\":\"torchvision:resnet50\",\"cacheDir\":\"/c\",";
      line += "\"bytes\":\"" + std::to_string(bytes) + "\",\"totalBytes\":\"100000000\",";
      line += "\"bytesPerSecond\":5000000,\"etaSeconds\":" +
              std::to_string((100000000 - bytes) / 5000000);
      return line + (done ? ",\"done\":true}}" : "}}");
    };
    mrcnn::app::EventRenderer tty({/*tty=*/true, 100, 10});
    tty.line(startLine());
    const std::string quarter = tty.line(download(1001, 25000000, false));
    QVERIFY2(quarter == "\r\033[Kdownloading torchvision:resnet50 [" + std::string(5, '#') +
                            std::string(18, '.') +
                            "] 25.0 MB of 100.0 MB, 5.0 MB/s, 15 s left",
             quarter.c_str());
    // Text goes above the download's bar, as above the task's.
    QVERIFY(tty.line("a line").ends_with("25.0 MB of 100.0 MB, 5.0 MB/s, 15 s left"));
    // Done commits the line; the training bar then starts on a line of its own.
    const std::string done = tty.line(download(1020, 100000000, true));
    QVERIFY2(done.ends_with("100.0 MB, 5.0 MB/s, done\n"), done.c_str());
    QVERIFY(tty.line(progressLine(20, 1.5, 1030)).ends_with("loss 1.5000"));
    QVERIFY(tty.line("after").find("downloading") == std::string::npos);

    // Off a terminal: the first report, then a line each 5 s of the download, and the end.
    mrcnn::app::EventRenderer plain({/*tty=*/false, 100, 10});
    std::string out;
    for (int i = 0; i < 10; ++i)
      out += plain.line(download(1000 + i, static_cast<uint64_t>(i) * 10000000, false));
    out += plain.line(download(1010, 100000000, true));
    QVERIFY2(out == "downloading torchvision:resnet50: 0 bytes of 100.0 MB, 5.0 MB/s, 20 s left\n"
                    "downloading torchvision:resnet50: 50.0 MB of 100.0 MB, 5.0 MB/s, 10 s left\n"
                    "downloading torchvision:resnet50: 100.0 MB, 5.0 MB/s, done\n",
             out.c_str());
  }

  void aLogEventsTrailingNewlineIsNotAnEmptyLine() {
    mrcnn::app::EventRenderer r({/*tty=*/false, 100, 10});
    QCOMPARE(r.line(R"({"v":1,"type":"log","text":"dataset ready\n"})"),
             std::string("dataset ready\n"));
    QCOMPARE(r.line(R"({"v":1,"type":"log","text":"two\nlines\n\n"})"),
             std::string("two\nlines\n"));
    QCOMPARE(r.line(R"({"v":1,"type":"log","text":"\n"})"), std::string());
  }

  // A run resumed with a changed spec: the start line lists each change.
  void aResumeWithChangesListsThem() {
    mrcnn::app::EventRenderer r({/*tty=*/false, 100, 10});
    const std::string text = r.line(
        R"({"v":1,"type":"start","time":1000,"task":"train","device":"cpu","totalSteps":"300",)"
        R"("startStep":"200","specChanges":[{"field":"init_learning_rate","before":"0.02","after":"0.01"},)"
        R"({"field":"total_steps","before":"200","after":"300"}]})");
    QCOMPARE(text, std::string("train on cpu: resuming at step 200 of 300\n"
                               "  changed since the last start (from step 200 on):\n"
                               "    init_learning_rate: 0.02 -> 0.01\n"
                               "    total_steps: 200 -> 300\n"));
  }

  void inferenceProgressIsImagesDoneOfTheTotal() {
    mrcnn::app::EventRenderer r({/*tty=*/true, 100, 3});
    r.line(
        R"({"v":1,"type":"start","time":1000,"task":"inference","device":"cpu","totalSteps":"40"})");
    const std::string frame = r.line(
        R"({"v":1,"type":"progress","time":1010,"step":"10","imagesPerSecond":2.5,"etaSeconds":12})");
    QVERIFY2(frame == "\r\033[Kimages 10/40 [" + std::string(10, '#') + std::string(30, '.') +
                          "]  25%  2.50 img/s  ETA 12s",
             frame.c_str());  // no loss line, no loss in the bar
    const std::string done =
        r.line(R"({"v":1,"type":"done","time":1030,"status":"ok","summary":"40 images"})");
    QVERIFY2(done == "\ninference finished after 30s: 10 of 40 images\n  40 images\n",
             done.c_str());
  }

  void anEngineThatDiesWithoutDoneStillGetsASummary() {
    mrcnn::app::EventRenderer r({/*tty=*/false, 100, 10});
    r.line(startLine());
    r.line(progressLine(40, 0.9, 1010));
    const std::string out = r.finish(137);
    QVERIFY2(out == "train killed by signal 9: step 40 of 200, loss 0.9000\n", out.c_str());
    mrcnn::app::EventRenderer quiet;
    QCOMPARE(quiet.line("nlayers: 18"), std::string("nlayers: 18\n"));
    QCOMPARE(quiet.finish(0), std::string());  // validate: no events, no summary
    // A task that failed before any event already said why on stderr.
    QCOMPARE(quiet.finish(3), std::string());
    QCOMPARE(quiet.finish(128 + 9), std::string("task killed by signal 9\n"));
    QCOMPARE(mrcnn::app::EventRenderer::duration(59.6), std::string("1m00s"));
    QCOMPARE(mrcnn::app::EventRenderer::duration(3600 * 25 + 61), std::string("25h01m01s"));
  }

  void launcherRendersAnEnginesEvents() {
    QTemporaryDir dir;
    QByteArray script = "#!/bin/sh\necho 'plain text from the engine'\n";
    for (const std::string& line : {startLine(), progressLine(20, 1.5, 1010), evalLine()})
      script += "echo '" + QByteArray::fromStdString(line) + "'\n";
    script += "printf 'last line without newline'\nexit 5\n";
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("MRCNN_ENGINE", writeFile(dir, "events.sh", script, true));
    const Run r = headless({"spec.txt"}, env);
    QCOMPARE(r.code, 5);
    QVERIFY2(r.out.startsWith("plain text from the engine\ntrain on cpu: 200 steps"),
             qPrintable(r.out));
    QVERIFY(r.out.contains("step 20/200 (10%)  4.25 img/s"));
    QVERIFY(r.out.contains("  AP50  IoU=0.50       area=all     maxDets=100   0.800   0.700\n"));
    QVERIFY(r.out.contains("\nlast line without newline\n"));
    QVERIFY2(r.out.endsWith("train failed with exit code 5: step 20 of 200, loss 1.5000\n"
                            "  best bbox AP 0.512 (step 100), segm AP 0.412 (step 100)\n"),
             qPrintable(r.out));
    QVERIFY(!r.out.contains("{\"v\""));  // no raw event reached the terminal
  }

  void theSpecsReportFrequencySetsTheTerminalsLossLines() {
    QTemporaryDir dir;
    QByteArray script = "#!/bin/sh\n";
    script += "echo '" + QByteArray::fromStdString(startLine()) + "'\n";
    for (int i = 1; i <= 7; ++i)
      script +=
          "echo '" +
          QByteArray::fromStdString(progressLine(static_cast<uint64_t>(i * 20), 1.0, 1000 + i)) +
          "'\n";
    const QString engine = writeFile(dir, "engine.sh", script, true);
    const QString spec = writeFile(dir, "spec.txt", "total_steps: 200\nreport_frequency: 60\n");
    const auto lossLineSteps = [](const std::string& out) {
      QList<int> steps;
      const QRegularExpression loss_line("step (\\d+)  lr 0.02  loss 1.0000  \\(rpn_obj");
      for (auto it = loss_line.globalMatch(QString::fromStdString(out)); it.hasNext();)
        steps << it.next().captured(1).toInt();
      return steps;
    };
    const std::string from_spec = underTerminal({spec}, engine);
    QVERIFY2(from_spec.find("\033[K") != std::string::npos, from_spec.c_str());  // a terminal
    QCOMPARE(lossLineSteps(from_spec), (QList<int>{20, 60, 120}));
    // --set overrides the spec, in both spellings.
    QCOMPARE(lossLineSteps(underTerminal({spec, "--set", "report_frequency=40"}, engine)),
             (QList<int>{20, 40, 80, 120}));
    QCOMPARE(lossLineSteps(underTerminal({"--set=report_frequency=100", "--spec=" + spec}, engine)),
             (QList<int>{20, 100}));
    // Without a readable spec the launcher keeps its default (50) and the engine says why.
    QCOMPARE(lossLineSteps(underTerminal({dir.filePath("missing.txt")}, engine)),
             (QList<int>{20, 60, 100}));
  }
};

QTEST_GUILESS_MAIN(EventRenderTest)
#include "test_event_render.moc"

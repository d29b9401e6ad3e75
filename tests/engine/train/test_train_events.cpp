// The training run's outside (engine/train): the event schema's JSON round trip (every field)
// and the event builders; the event writer (whole lines from many threads, never a torn line
// on a full disk); TensorBoard's event files (CRC-32C, read back by tensorboard's own reader,
// never a torn record); the stop flag on real signals; the run directory's layout.
#include <ATen/ATen.h>
#include <google/protobuf/util/message_differencer.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include "engine/train/checkpoint.h"
#include "engine/events/event_writer.h"
#include "engine/train/run_dir.h"
#include "engine/train/stop_signal.h"
#include "engine/events/tensorboard_writer.h"
#include "specs/events.h"
#include "specs/tensorboard.pb.h"
#include "tests/common/files.h"
#include "tests/common/reference_script.h"

namespace fs = std::filesystem;
namespace train = mrcnn::train;
namespace events = mrcnn::events;

namespace {

using mrcnn::testing::readAll;

}  // namespace

class TrainEventsTest : public QObject {
  Q_OBJECT
 private slots:
  // --- events ---------------------------------------------------------------------------------
  void everyEventFieldRoundTrips() {
    events::Event e;
    e.set_v(1);
    e.set_type("progress");
    e.set_time(1763776000.25);
    e.set_task("train");
    e.set_spec_path("/runs/a/spec.txt");
    e.set_run_dir("/runs/a");
    e.set_device("cuda:0");
    e.set_world_size(2);
    e.set_total_steps(5000);
    e.set_start_step(100);
    e.set_engine_version("0.1.0");
    events::SpecChange* change = e.add_spec_changes();
    change->set_field("init_learning_rate");
    change->set_before("0.02");
    change->set_after("0.01");
    e.set_step(120);
    e.set_epoch(3);
    e.set_lr(0.02);
    events::Losses* l = e.mutable_losses();
    l->set_total(1.5);
    l->set_rpn_objectness(0.1);
    l->set_rpn_box(0.2);
    l->set_fast_rcnn_class(0.3);
    l->set_fast_rcnn_box(0.4);
    l->set_mask(0.5);
    e.set_images_per_second(12.5);
    e.set_data_wait_share(0.05);
    e.mutable_memory()->set_rss_mib(1024.5);
    e.mutable_memory()->set_device_mib(2048.25);
    e.mutable_memory()->set_device_peak_mib(3000);
    e.set_eta_seconds(360);
    e.set_skipped_steps(4);
    e.set_loss_scale(32768);
    for (auto* stats : {e.mutable_bbox(), e.mutable_segm()}) {
      for (int i = 0; i < 12; ++i)
        stats->add_stats(i == 3 ? -1.0 : 0.01 * (i + 1) + (stats == e.mutable_segm() ? 0.5 : 0));
      (*stats->mutable_per_category_ap())[1] = 0.25;
      (*stats->mutable_per_category_ap())[18] = 0.75;
      (*stats->mutable_category_names())[1] = "circle";
      (*stats->mutable_category_names())[18] = "star \"big\"";
    }
    e.set_images(50);
    e.set_metrics_path("eval/step-120.json");
    events::Losses* v = e.mutable_val_losses();
    v->set_total(1.75);
    v->set_rpn_objectness(0.125);
    v->set_rpn_box(0.25);
    v->set_fast_rcnn_class(0.375);
    v->set_fast_rcnn_box(0.5);
    v->set_mask(0.625);
    e.add_overlay_paths("eval/overlays/step-120/image-7.png");
    e.add_overlay_paths("eval/overlays/step-120/image-9.png");
    e.set_path("checkpoints/model.step-120.pt");
    e.set_best(true);
    e.set_code("corrupt_image");
    e.set_message("images/0001.jpg: cannot decode\nline two");
    e.set_image_id(-7);
    e.set_annotation_id(9000000000LL);
    e.set_exit_code(4);
    e.set_status("stopped");
    e.set_summary("step 120 of 5000");
    e.set_elapsed_seconds(61.5);
    e.set_text("ünïcode ✓");
    events::Download* dl = e.mutable_download();
    dl->set_name("torchvision:resnet50");
    dl->set_cache_dir("/home/u/.cache/mrcnn-workbench/weights");
    dl->set_bytes(25000000);
    dl->set_total_bytes(102530333);
    dl->set_bytes_per_second(5.5e6);
    dl->set_eta_seconds(14.1);
    dl->set_done(true);

    // Every field of the schema is set here: a field added to events.proto without a test
    // fails this check.
    const auto check_all_set = [](const google::protobuf::Message& m) {
      const auto* d = m.GetDescriptor();
      const auto* r = m.GetReflection();
      for (int i = 0; i < d->field_count(); ++i) {
        const auto* f = d->field(i);
        const bool set = f->is_repeated() ? r->FieldSize(m, f) > 0 : r->HasField(m, f);
        QVERIFY2(set, qPrintable(QString("field %1 is not covered by the round-trip test")
                                     .arg(QString::fromStdString(std::string(f->full_name())))));
      }
    };
    check_all_set(e);
    check_all_set(e.losses());
    check_all_set(e.memory());
    check_all_set(e.download());
    check_all_set(e.spec_changes(0));
    check_all_set(e.bbox());

    const std::string line = events::toJsonLine(e);
    QVERIFY(line.find('\n') == std::string::npos);  // one line, newlines escaped
    QVERIFY(line.find("\"rpnObjectness\":0.1") != std::string::npos);
    std::string error;
    const auto back = events::parseJsonLine(line + "\n", &error);
    QVERIFY2(back.has_value(), error.c_str());
    std::string diff;
    google::protobuf::util::MessageDifferencer differ;
    differ.ReportDifferencesToString(&diff);
    QVERIFY2(differ.Compare(e, *back), diff.c_str());

    // A newer engine's fields are ignored, the known ones kept.
    const auto newer = events::parseJsonLine(
        R"({"v":1,"type":"progress","time":5,"step":3,"futureField":{"a":[1,2]},"alsoNew":"x"})",
        &error);
    QVERIFY2(newer.has_value(), error.c_str());
    QCOMPARE(newer->step(), uint64_t(3));
    QCOMPARE(QString::fromStdString(newer->type()), QString("progress"));

    // Not events.
    QVERIFY(!events::parseJsonLine("shapes dataset generated", &error));
    QVERIFY(!error.empty());
    QVERIFY(!events::parseJsonLine(R"({"v":1,"step":3})", &error));
    QCOMPARE(QString::fromStdString(error), QString("no \"type\" field"));
  }

  void eventBuildersFillTheirType() {
    train::ProgressInfo p;
    p.step = 10;
    p.lr = 0.01;
    p.loss_total = 2.0;
    p.loss_mask = 0.7;
    p.images_per_second = 3.5;
    p.skipped_steps = 2;
    events::Event e = train::progressEvent(p);
    QCOMPARE(QString::fromStdString(e.type()), QString("progress"));
    QCOMPARE(e.losses().mask(), 0.7);
    QCOMPARE(e.skipped_steps(), uint64_t(2));
    train::CocoSummary bbox{
        {0.5, 0.7, 0.6, -1, 0.4, 0.5, 0.3, 0.5, 0.55, -1, 0.5, 0.6}, {{1, 0.5}}, {{1, "circle"}}};
    e = train::evalEvent(100, 50, bbox, nullptr, "eval/step-100.json");
    QCOMPARE(e.bbox().stats_size(), 12);
    QVERIFY(!e.has_segm());
    QCOMPARE(e.bbox().category_names().at(1), std::string("circle"));
    QCOMPARE(
        QString::fromStdString(train::startEvent("train", "s", "r", "cpu", 1, 50, 0, "1").type()),
        QString("start"));
    QCOMPARE(train::checkpointEvent("p", 5, true).best(), true);
    QCOMPARE(train::warningEvent("corrupt_image", "m", 12).image_id(), int64_t(12));
    QCOMPARE(train::errorEvent("nan_loss", "m", 1).exit_code(), 1u);
    QCOMPARE(QString::fromStdString(train::doneEvent("ok", "s", 3).status()), QString("ok"));
    QCOMPARE(QString::fromStdString(train::logEvent("t").text()), QString("t"));
  }

  void eventWriterWritesWholeLinesFromManyThreads() {
    QTemporaryDir dir;
    const fs::path file = fs::path(dir.path().toStdString()) / "events.jsonl";
    int pipe_fds[2];
    QVERIFY(::pipe(pipe_fds) == 0);
    std::string echoed;
    std::thread reader([&] {
      char buf[4096];
      ssize_t n;
      while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0)
        echoed.append(buf, static_cast<size_t>(n));
    });
    {
      train::EventWriter writer({file, pipe_fds[1], 0});
      std::vector<std::thread> threads;
      for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&writer, t] {
          for (int i = 0; i < 200; ++i) {
            train::ProgressInfo p;
            p.step = static_cast<uint64_t>(t * 1000 + i);
            p.loss_total = 1.0 / (i + 1);
            writer.write(train::progressEvent(p));
          }
        });
      }
      for (auto& th : threads)
        th.join();
    }
    ::close(pipe_fds[1]);
    reader.join();
    ::close(pipe_fds[0]);
    for (const std::string& text : {readAll(file), echoed}) {
      QVERIFY(!text.empty() && text.back() == '\n');
      std::set<uint64_t> steps;
      size_t start = 0;
      while (start < text.size()) {
        const size_t end = text.find('\n', start);
        const auto ev = events::parseJsonLine(std::string_view(text).substr(start, end - start));
        QVERIFY(ev.has_value());
        QCOMPARE(ev->v(), 1u);
        QVERIFY(ev->time() > 1.7e9);
        steps.insert(ev->step());
        start = end + 1;
      }
      QCOMPARE(steps.size(), size_t(800));
    }

    // Rank 1 writes nothing.
    const fs::path other = fs::path(dir.path().toStdString()) / "rank1.jsonl";
    train::EventWriter rank1({other, -1, 1});
    rank1.write(train::logEvent("x"));
    QVERIFY(!rank1.active());
    QVERIFY(!fs::exists(other));

    // Appends: a second writer (a resumed run) keeps the first one's lines.
    {
      train::EventWriter again({file, -1, 0});
      again.write(train::logEvent("resumed"));
    }
    const std::string all = readAll(file);
    QCOMPARE(std::count(all.begin(), all.end(), '\n'), 801L);
  }

  void aFullDiskNeverLeavesATornLine() {
    // RLIMIT_FSIZE makes write(2) short at the limit, as a full disk does; in a child, so the
    // limit does not touch the test process.
    QTemporaryDir dir;
    const fs::path file = fs::path(dir.path().toStdString()) / "events.jsonl";
    const pid_t pid = ::fork();
    QVERIFY(pid >= 0);
    if (pid == 0) {
      ::signal(SIGXFSZ, SIG_IGN);
      train::EventWriter writer({file, -1, 0});
      writer.write(train::logEvent("first"));
      const off_t size = static_cast<off_t>(fs::file_size(file));
      rlimit limit{};
      ::getrlimit(RLIMIT_FSIZE, &limit);
      limit.rlim_cur = static_cast<rlim_t>(size + 10);
      ::setrlimit(RLIMIT_FSIZE, &limit);
      try {
        writer.write(train::logEvent("a line longer than the ten bytes left"));
        ::_exit(2);  // no error reported
      } catch (const std::runtime_error& e) {
        // The message names the folder first, then the file in it.
        const std::string what = e.what();
        if (what.find(file.parent_path().string() + ": ") != 0 ||
            what.find(file.filename().string()) == std::string::npos)
          ::_exit(3);
      }
      ::_exit(static_cast<off_t>(fs::file_size(file)) == size ? 0 : 4);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    QVERIFY(WIFEXITED(status));
    QCOMPARE(WEXITSTATUS(status), 0);
    const std::string text = readAll(file);
    QVERIFY(text.ends_with("\n"));
    QCOMPARE(std::count(text.begin(), text.end(), '\n'), 1L);
  }

  // --- TensorBoard ---------------------------------------------------------------------------
  void maskedCrc32cOfAKnownInput() {
    // TFRecord's mask over CRC-32C's check value (RFC 3720: crc32c("123456789") = E3069283).
    const uint32_t crc = 0xE3069283u;
    QCOMPARE(train::maskedCrc32c("123456789", 9), ((crc >> 15) | (crc << 17)) + 0xA282EAD8u);
  }

  // The events of a training run, written through the event writer's listener, read back by
  // tensorboard's EventAccumulator: every scalar at its step with the event's value (as a
  // 32-bit float) and time.
  void tensorboardReadsTheEventsAsWritten() {
    if (qEnvironmentVariableIsEmpty("MRCNN_PYTHON"))
      QSKIP("MRCNN_PYTHON is not set (run through ctest)");
    QTemporaryDir dir;
    const fs::path root(dir.path().toStdString());
    train::EventWriter writer({root / "events.jsonl", -1, 0});
    train::TensorBoardWriter tb(root / "tensorboard");
    writer.addListener([&tb](const events::Event& e) { tb.onEvent(e); });
    writer.write(train::startEvent("train", "spec.txt", root.string(), "cpu", 1, 50, 0, "test"));
    std::vector<events::Event> written;
    for (uint64_t step = 10; step <= 50; step += 10) {
      events::Event e;
      e.set_type("progress");
      e.set_time(1795000000.25 + static_cast<double>(step));
      e.set_step(step);
      e.set_lr(0.02 / static_cast<double>(step));
      e.set_images_per_second(3.5 + static_cast<double>(step) / 7);
      e.set_data_wait_share(0.125);
      e.mutable_memory()->set_rss_mib(1234.5);
      events::Losses* l = e.mutable_losses();
      l->set_total(2.0 / static_cast<double>(step));
      l->set_rpn_objectness(0.1);
      l->set_rpn_box(0.2);
      l->set_fast_rcnn_class(0.3);
      l->set_fast_rcnn_box(0.4);
      l->set_mask(0.5 + 1e-3 * static_cast<double>(step));
      writer.write(e);
      written.push_back(e);
    }
    events::Event eval;
    eval.set_type("eval");
    eval.set_time(1795000100.5);
    eval.set_step(50);
    for (int i = 0; i < 12; ++i) {
      eval.mutable_bbox()->add_stats(0.01 * i);
      eval.mutable_segm()->add_stats(i == 3 ? -1.0 : 0.02 * i);
    }
    // Its metrics file, made by hand: one class (id 7, "kite") with 10 objects whose .50 curve
    // has precision 1 to recall .50 (detections scoring .9) and .5 to recall .80 (scoring .4).
    std::string precision = "[", scores = "[";
    for (int r = 0; r <= 100; ++r) {
      precision += (r ? "," : "") + std::string(r <= 50 ? "1.0" : r <= 80 ? "0.5" : "0");
      scores += (r ? "," : "") + std::string(r <= 50 ? "0.9" : r <= 80 ? "0.4" : "0");
    }
    const fs::path metrics = root / "step-50.json";
    std::ofstream(metrics) << R"({"segm": {"pr_curves": {"7": {"0.50": )" << precision
                           << R"(]}}, "pr_scores": {"7": {"0.50": )" << scores
                           << R"(]}}, "confusion": {"categories": [7], "matrix": [[7, 3], [1, 0]]}},
                               "category_names": {"7": "kite"}})";
    eval.set_metrics_path(metrics.string());
    writer.write(eval);
    writer.write(train::logEvent("not a scalar"));

    QString log;
    const QString out = dir.filePath("read.json");
    const QString error = mrcnn::testing::runReferenceScript(
        "tests/engine/train/tensorboard_oracle.py",
        {QString::fromStdString((root / "tensorboard").string()), out}, &log);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const QJsonObject read =
        QJsonDocument::fromJson(QByteArray::fromStdString(readAll(out.toStdString()))).object();
    QCOMPARE(read["files"].toInt(), 1);
    const QJsonObject scalars = read["scalars"].toObject();
    const auto check = [&](const QString& tag, uint64_t step, double wall_time, double value) {
      for (const QJsonValue& point : scalars[tag].toArray()) {
        const QJsonArray p = point.toArray();
        if (static_cast<uint64_t>(p[0].toInteger()) != step) continue;
        return p[1].toDouble() == wall_time &&
               p[2].toDouble() == static_cast<double>(static_cast<float>(value));
      }
      return false;
    };
    for (const events::Event& e : written) {
      const uint64_t s = e.step();
      QVERIFY(check("loss/total", s, e.time(), e.losses().total()));
      QVERIFY(check("loss/mask", s, e.time(), e.losses().mask()));
      QVERIFY(check("loss/rpn_objectness", s, e.time(), e.losses().rpn_objectness()));
      QVERIFY(check("train/learning_rate", s, e.time(), e.lr()));
      QVERIFY(check("train/images_per_second", s, e.time(), e.images_per_second()));
      QVERIFY(check("train/data_wait_share", s, e.time(), e.data_wait_share()));
      QVERIFY(check("memory/rss_mib", s, e.time(), e.memory().rss_mib()));
    }
    QCOMPARE(scalars["loss/total"].toArray().size(), static_cast<qsizetype>(written.size()));
    QVERIFY(check("eval/bbox_AP", 50, eval.time(), 0.0));
    QVERIFY(check("eval/bbox_ARl", 50, eval.time(), 0.11));
    QVERIFY(check("eval/segm_AP50", 50, eval.time(), 0.02));
    QVERIFY(check("eval/segm_APs", 50, eval.time(), -1.0));
    QVERIFY(!scalars.contains("memory/device_mib"));  // no GPU memory in these events
    QCOMPARE(scalars.size(), 6 + 3 + 1 + 24);
    // The class's PR curve for TensorBoard's pr_curves plugin, worked out by hand: at score
    // thresholds up to .40 the curve reaches recall .80 at precision .5 (8 true, 8 false
    // positives, 2 missed), up to .90 recall .50 at precision 1 (5, 0, 5), above it nothing.
    const QJsonArray curve = read["tensors"].toObject()["pr_curves/segm/kite"].toArray();
    QCOMPARE(curve.size(), 1);
    const QJsonArray c = curve[0].toArray();
    QCOMPARE(c[0].toInteger(), 50);
    QCOMPARE(c[1].toString(), QString("pr_curves"));
    QCOMPARE(c[2].toArray(), (QJsonArray{6, 101}));
    const QJsonArray v = c[3].toArray();
    const auto cell = [&v](int row, int threshold) { return v[row * 101 + threshold].toDouble(); };
    for (int i = 0; i <= 100; ++i) {
      const double want[6] = {i <= 40   ? 8.0
                              : i <= 90 ? 5.0
                                        : 0.0,
                              i <= 40 ? 8.0 : 0.0,
                              0.0,
                              i <= 40   ? 2.0
                              : i <= 90 ? 5.0
                                        : 10.0,
                              i <= 40   ? 0.5
                              : i <= 90 ? 1.0
                                        : 0.0,
                              i <= 40   ? 0.8
                              : i <= 90 ? 0.5
                                        : 0.0};
      for (int row = 0; row < 6; ++row)
        QVERIFY2(std::abs(cell(row, i) - want[row]) < 1e-6,
                 qPrintable(QString("row %1 threshold %2: %3").arg(row).arg(i).arg(cell(row, i))));
    }
  }

  void tensorboardNeverLeavesATornRecord() {
    QTemporaryDir dir;
    const fs::path folder = fs::path(dir.path().toStdString()) / "tensorboard";
    const pid_t pid = ::fork();
    QVERIFY(pid >= 0);
    if (pid == 0) {
      ::signal(SIGXFSZ, SIG_IGN);
      train::TensorBoardWriter tb(folder);
      tb.scalar("loss/total", 1.5, 1, 1795000000.0);
      const off_t size = static_cast<off_t>(fs::file_size(tb.file()));
      rlimit limit{};
      ::getrlimit(RLIMIT_FSIZE, &limit);
      limit.rlim_cur = static_cast<rlim_t>(size + 10);
      ::setrlimit(RLIMIT_FSIZE, &limit);
      try {
        tb.scalar("a tag long enough not to fit in ten bytes", 2.5, 2, 1795000001.0);
        ::_exit(2);  // no error reported
      } catch (const std::runtime_error& e) {
        if (std::string(e.what()).find(tb.file().string()) != 0) ::_exit(3);
      }
      ::_exit(static_cast<off_t>(fs::file_size(tb.file())) == size ? 0 : 4);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    QVERIFY(WIFEXITED(status));
    QCOMPARE(WEXITSTATUS(status), 0);
  }

  // --- stop signal ---------------------------------------------------------------------------
  void stopFlagOnARealSignal() {
    train::StopSignal::install();
    QVERIFY(!train::StopSignal::requested());
    ::kill(::getpid(), SIGTERM);
    QVERIFY(train::StopSignal::requested());
    QCOMPARE(train::StopSignal::signal(), SIGTERM);
    train::StopSignal::reset();
    QVERIFY(!train::StopSignal::requested());
    train::StopSignal::uninstall();

    // The second signal exits at once with 128 + its number.
    const pid_t pid = ::fork();
    QVERIFY(pid >= 0);
    if (pid == 0) {
      train::StopSignal::install();
      ::kill(::getpid(), SIGINT);
      if (!train::StopSignal::requested()) ::_exit(1);
      ::kill(::getpid(), SIGINT);
      ::_exit(2);  // not reached when the second signal works
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    QVERIFY(WIFEXITED(status));
    QCOMPARE(WEXITSTATUS(status), 128 + SIGINT);
  }

  // --- run directory ---------------------------------------------------------------------------
  void runDirectoryLayout() {
    QTemporaryDir dir;
    const train::RunDir run(fs::path(dir.path().toStdString()) / "runs" / "a");
    QCOMPARE(run.evalFile(500).filename().string(), std::string("step-500.json"));
    QCOMPARE(run.eventsFile().filename().string(), std::string("events.jsonl"));
    QVERIFY(!run.hasCheckpoint());
    run.create();
    QVERIFY(fs::is_directory(run.checkpointsDir()));
    QVERIFY(fs::is_directory(run.evalDir()));
    QVERIFY(!run.hasCheckpoint());
    train::Checkpoint c;
    c.step = 3;
    c.model = {{"w", at::zeros({1})}};
    train::writeCheckpoint(c, run.checkpointsDir() / "model.step-3.pt");
    QVERIFY(run.hasCheckpoint());
    QCOMPARE(train::checkpointStepOf("model.step-3.pt").value_or(0), uint64_t(3));
    QVERIFY(!train::checkpointStepOf("model.step-.pt"));
    QVERIFY(!train::checkpointStepOf("model.step-3x.pt"));
    QVERIFY(!train::checkpointStepOf(".model.step-3.pt.partial"));
  }
};

QTEST_GUILESS_MAIN(TrainEventsTest)
#include "test_train_events.moc"

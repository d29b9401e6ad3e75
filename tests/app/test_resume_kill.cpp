// The resume proof: a training run killed with SIGKILL at a random step and restarted on the
// same run directory finishes with exactly the weights of an uninterrupted run with the same
// seed — model parameters and buffers, optimizer state, loss scaler, the data position and the
// random generator, compared bit for bit — in fp32 and under bf16 autocast.
//
// Both runs train the real engine on the real data path (the embedded shapes dataset,
// generated into a temporary folder), small enough for a 2-core CPU: 12 steps of batch 2 at
// 128×128 with a ResNet-10 FPN, a checkpoint every 3 steps, an evaluation at step 6, and an
// epoch of 4 batches so the run crosses epoch boundaries (reshuffles) after the resume.
// Besides the weights: the killed run leaves only whole checkpoints visible, the restart
// starts at the last one (its start event says so), ignores and removes a torn temporary
// file, and reports the same loss at every step as the uninterrupted run.
//
// A third, uninterrupted run without the evaluation at step 6 must end with the same weights
// too: evaluating does not move training.
//
// The kill step is random but logged: MRCNN_RESUME_KILL_SEED=<seed> repeats a run's choice.
// LibTorch before Qt: Qt's `slots` macro would rewrite a LibTorch member function.
#include <ATen/ATen.h>
#include <ATen/cpu/Utils.h>
#include <signal.h>

#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/train/checkpoint.h"
#include "specs/events.h"
#include "tests/common/native_bf16.h"

namespace {

namespace fs = std::filesystem;

using mrcnn::events::Event;
using mrcnn::testing::cpuHasNativeBf16;

constexpr int kTotalSteps = 12;
constexpr int kSaveEvery = 3;
constexpr int kEvalEvery = 6;
constexpr int kTimeoutMs = 600000;

QString binDir() {
  return qEnvironmentVariable("MRCNN_BIN_DIR");
}
QString sourceDir() {
  return qEnvironmentVariable("MRCNN_SOURCE_DIR");
}
QString engine() {
  return binDir() + "/mrcnn-engine";
}

// The engine's arguments for a run in `run_dir` on the shapes dataset in `data_root`; with
// `extra_sets` added; with `evaluate_midway` false there is no evaluation before the final one.
QStringList engineArgs(const QString& run_dir, const QString& data_root,
                       const QStringList& extra_sets, bool evaluate_midway = true) {
  const QStringList sets = {
      "device=cpu",
      "seed=4242",
      "total_steps=" + QString::number(kTotalSteps),
      "save_checkpoints_steps=" + QString::number(kSaveEvery),
      "num_steps_per_eval=" + QString::number(evaluate_midway ? kEvalEvery : kTotalSteps),
      "keep_checkpoint_max=20",
      // A schedule that changes across the kill: warmup, then two decays.
      "warmup_steps=4",
      "warmup_learning_rate=0.001",
      "init_learning_rate=0.005",
      "learning_rate_steps=[8, 10]",
      "learning_rate_decay_levels=[0.1, 0.01]",
      "logging_frequency=1",
      "report_frequency=1",
      "train_batch_size=2",
      "eval_batch_size=2",
      "target_bbox_map=0",
      "target_segm_map=0",
      "data_config.shapes_dataset.root=" + data_root,
      "data_config.shapes_dataset.train_images=8",
      "data_config.shapes_dataset.val_images=2",
      "data_config.shapes_dataset.min_side=96",
      "data_config.shapes_dataset.max_side=160",
      "data_config.image_size=(128, 128)",
      "data_config.n_workers=2",
      "data_config.prefetch_buffer_size=3",
      "data_config.eval_samples=0",
      "maskrcnn_config.nlayers=10",
      "maskrcnn_config.rpn_batch_size_per_im=128",
      "maskrcnn_config.batch_size_per_im=64",
      "maskrcnn_config.train_rpn_pre_nms_topn=500",
      "maskrcnn_config.train_rpn_post_nms_topn=200",
      "maskrcnn_config.test_rpn_pre_nms_topn=200",
      "maskrcnn_config.test_rpn_post_nms_topn=100",
  };
  QStringList args = {"--spec",    sourceDir() + "/specs/shapes_resnet18.txt",
                      "--task",    "train",
                      "--run-dir", run_dir};
  for (const QString& s : sets + extra_sets)
    args << "--set" << s;
  return args;
}

// One engine process: its events as they arrive, its stderr, how it ended.
struct EngineRun {
  std::vector<Event> events;
  QString err;
  QString non_event_lines;
  bool finished = false;
  bool crashed = false;  // ended by a signal
  int exit_code = -1;
  std::optional<int> killed_at;  // the step whose progress event preceded the SIGKILL

  std::vector<Event> ofType(const std::string& type) const {
    std::vector<Event> out;
    for (const Event& e : events)
      if (e.type() == type) out.push_back(e);
    return out;
  }
  QString tail() const {
    return "stderr:\n" + err.right(3000) + "\nother output:\n" + non_event_lines.right(2000);
  }
};

// Runs the engine with `args`. When `kill_step` is given, sends SIGKILL `kill_delay_ms` after
// the progress event of that step arrives.
EngineRun runEngine(const QStringList& args, std::optional<int> kill_step = std::nullopt,
                    int kill_delay_ms = 0) {
  EngineRun run;
  QProcess p;
  p.setProcessChannelMode(QProcess::SeparateChannels);
  p.start(engine(), args);
  if (!p.waitForStarted(30000)) {
    run.err = "cannot start " + engine() + ": " + p.errorString();
    return run;
  }
  QByteArray pending;
  QElapsedTimer clock;
  clock.start();
  const auto consume = [&] {
    pending += p.readAllStandardOutput();
    qsizetype nl;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const QByteArray line = pending.left(nl);
      pending.remove(0, nl + 1);
      std::string error;
      if (auto e = mrcnn::events::parseJsonLine(line.toStdString(), &error)) {
        run.events.push_back(*e);
        if (kill_step && !run.killed_at && e->type() == "progress" &&
            static_cast<int>(e->step()) == *kill_step) {
          if (kill_delay_ms > 0) QThread::msleep(static_cast<unsigned long>(kill_delay_ms));
          ::kill(static_cast<pid_t>(p.processId()), SIGKILL);
          run.killed_at = *kill_step;
        }
      } else {
        run.non_event_lines += QString::fromUtf8(line) + "\n";
      }
    }
  };
  while (p.state() != QProcess::NotRunning && clock.elapsed() < kTimeoutMs) {
    p.waitForReadyRead(200);
    consume();
    run.err += QString::fromUtf8(p.readAllStandardError());
  }
  if (p.state() != QProcess::NotRunning) {
    p.kill();
    p.waitForFinished();
    run.err += "\n(timed out)";
    return run;
  }
  consume();
  run.err += QString::fromUtf8(p.readAllStandardError());
  run.finished = true;
  run.crashed = p.exitStatus() == QProcess::CrashExit;
  run.exit_code = run.crashed ? -1 : p.exitCode();
  return run;
}

// The per-step total losses of a run's progress events.
std::map<uint64_t, double> lossesByStep(const EngineRun& run) {
  std::map<uint64_t, double> out;
  for (const Event& e : run.ofType("progress"))
    out[e.step()] = e.losses().total();
  return out;
}

bool sameBits(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const at::Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

// Tensors of `group` that differ between two checkpoints, one line each: the name and the
// largest absolute difference (or what does not match).
QStringList differences(const QString& group, const mrcnn::model::StateDict& a,
                        const mrcnn::model::StateDict& b, int* compared) {
  QStringList out;
  std::map<std::string, at::Tensor> bs(b.begin(), b.end());
  for (const auto& [name, ta] : a) {
    const QString label = group + "." + QString::fromStdString(name);
    const auto it = bs.find(name);
    if (it == bs.end()) {
      out << label + ": only in the uninterrupted run";
      continue;
    }
    const at::Tensor tb = it->second;
    bs.erase(it);
    ++*compared;
    if (sameBits(ta, tb)) continue;
    if (ta.scalar_type() != tb.scalar_type() || ta.sizes() != tb.sizes()) {
      out << label + ": " + QString::fromStdString(c10::str(ta.sizes(), " ", ta.scalar_type())) +
                 " vs " + QString::fromStdString(c10::str(tb.sizes(), " ", tb.scalar_type()));
      continue;
    }
    const at::Tensor da = ta.to(at::kDouble), db = tb.to(at::kDouble);
    const double max_abs = (da - db).abs().max().item<double>();
    const double scale = da.abs().max().item<double>();
    const int64_t n_diff = da.ne(db).sum().item<int64_t>();
    out << QString("%1: max |diff| %2 (largest |value| %3), %4 of %5 elements differ")
               .arg(label)
               .arg(max_abs, 0, 'g', 6)
               .arg(scale, 0, 'g', 6)
               .arg(n_diff)
               .arg(ta.numel());
  }
  for (const auto& [name, t] : bs)
    out << group + "." + QString::fromStdString(name) + ": only in the resumed run";
  return out;
}

// Every tensor of two checkpoints compared bit for bit: the lines of differences() for
// each group and the RNG; `compared` counts the tensors.
QStringList checkpointDifferences(const mrcnn::train::Checkpoint& got,
                                  const mrcnn::train::Checkpoint& want, int* compared) {
  QStringList diffs = differences("model", got.model, want.model, compared);
  diffs += differences("optimizer", got.optimizer, want.optimizer, compared);
  diffs += differences("loss_scaler", got.loss_scaler, want.loss_scaler, compared);
  if (!sameBits(got.rng.cpu, want.rng.cpu)) diffs << "rng.cpu: the generator states differ";
  ++*compared;
  if (got.step != want.step || got.epoch != want.epoch || got.data_position != want.data_position) {
    diffs << QString("trainer: step %1 epoch %2 position %3, expected %4 %5 %6")
                 .arg(got.step)
                 .arg(got.epoch)
                 .arg(got.data_position)
                 .arg(want.step)
                 .arg(want.epoch)
                 .arg(want.data_position);
  }
  return diffs;
}

mrcnn::train::Checkpoint finalCheckpoint(const QString& run_dir) {
  return mrcnn::train::readCheckpoint(fs::path(run_dir.toStdString()) / "checkpoints" /
                                      mrcnn::train::checkpointFileName(kTotalSteps));
}

// Hidden files in a folder (temporary files of a save).
QStringList hiddenFiles(const fs::path& dir) {
  QStringList out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".")) out << QString::fromStdString(name);
  }
  return out;
}

// The step a restart resumes from: what `last` names, else the highest checkpoint present;
// 0 when there is none. Reads the folder as it is (a CheckpointStore would tidy it up). A
// `last` that does not name an existing checkpoint sets `error`.
uint64_t resumeStepOf(const fs::path& checkpoints, QString* error) {
  QFile last(QString::fromStdString((checkpoints / "last").string()));
  if (last.open(QIODevice::ReadOnly)) {
    const std::string name = QString::fromUtf8(last.readAll()).trimmed().toStdString();
    const auto step = mrcnn::train::checkpointStepOf(name);
    if (!step || !fs::exists(checkpoints / name))
      *error =
          "checkpoints/last names no existing checkpoint: \"" + QString::fromStdString(name) + "\"";
    return step.value_or(0);
  }
  uint64_t highest = 0;
  for (const auto& entry : fs::directory_iterator(checkpoints)) {
    if (const auto step = mrcnn::train::checkpointStepOf(entry.path().filename().string()))
      highest = std::max(highest, *step);
  }
  return highest;
}

}  // namespace

class ResumeKillTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    if (binDir().isEmpty() || !QFile::exists(engine()))
      QSKIP("MRCNN_BIN_DIR/mrcnn-engine not found (run through ctest)");
    if (sourceDir().isEmpty()) QSKIP("MRCNN_SOURCE_DIR is not set (run through ctest)");
  }

  // fp32, and the bf16 autocast the CPU trains with under use_amp. The evaluation-independence
  // run (d) is precision-independent and made once.
  void killedRunFinishesWithTheSameWeights_data() {
    QTest::addColumn<QStringList>("sets");
    QTest::addColumn<bool>("check_eval_independence");
    QTest::newRow("fp32") << QStringList{"use_amp=False"} << true;
    QTest::newRow("bf16 autocast") << QStringList{"use_amp=True", "amp_dtype=bf16"} << false;
  }

  void killedRunFinishesWithTheSameWeights() {
    QFETCH(QStringList, sets);
    QFETCH(bool, check_eval_independence);
    if (sets.contains("use_amp=True") && !cpuHasNativeBf16())
      QSKIP(
          "this CPU has no native bf16 (AVX-512 BF16 or AMX): the engine trains in fp32 here "
          "(the fp32 row)");
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString data_root = tmp.filePath("shapes");
    const QString run_a = tmp.filePath("uninterrupted");
    const QString run_b = tmp.filePath("killed");

    bool seed_ok = false;
    quint32 seed = qEnvironmentVariable("MRCNN_RESUME_KILL_SEED").toUInt(&seed_ok);
    if (!seed_ok) seed = QRandomGenerator::global()->generate();
    QRandomGenerator pick(seed);
    // A step strictly after the first checkpoint and before the last step, and a delay that
    // lets the kill land inside the next step, an evaluation or a checkpoint write.
    const int kill_step =
        kSaveEvery + 1 + static_cast<int>(pick.bounded(kTotalSteps - kSaveEvery - 1));
    const int kill_delay_ms = static_cast<int>(pick.bounded(400));
    qInfo("kill at step %d + %d ms (MRCNN_RESUME_KILL_SEED=%u repeats this choice)", kill_step,
          kill_delay_ms, seed);

    QElapsedTimer clock;
    clock.start();
    // (a) Uninterrupted.
    const EngineRun a = runEngine(engineArgs(run_a, data_root, sets));
    QVERIFY2(a.finished && a.exit_code == 0, qPrintable(a.tail()));
    const auto a_done = a.ofType("done");
    QVERIFY2(a_done.size() == 1 && a_done[0].status() == "ok", qPrintable(a.tail()));
    QVERIFY2(!a.ofType("eval").empty() && a.ofType("eval")[0].step() == kEvalEvery,
             "the uninterrupted run did not evaluate in the middle of training");
    qInfo("uninterrupted run: %.1f s", static_cast<double>(clock.restart()) / 1000);

    // (b) Killed at kill_step...
    const EngineRun killed =
        runEngine(engineArgs(run_b, data_root, sets), kill_step, kill_delay_ms);
    QVERIFY2(killed.finished, qPrintable(killed.tail()));
    QVERIFY2(killed.killed_at && killed.crashed,
             qPrintable("the run was not killed at step " + QString::number(kill_step) + "\n" +
                        killed.tail()));
    QVERIFY(killed.ofType("done").empty());
    const double killed_seconds = static_cast<double>(clock.restart()) / 1000;

    // ...leaving no torn checkpoint visible: every checkpoint file and `last` reads whole.
    const fs::path checkpoints = fs::path(run_b.toStdString()) / "checkpoints";
    QStringList left;
    for (const auto& entry : fs::directory_iterator(checkpoints)) {
      const std::string name = entry.path().filename().string();
      left << QString::fromStdString(name);
      if (name.starts_with(".") || name == "last" || name == "best") continue;
      QVERIFY2(mrcnn::train::checkpointStepOf(name).has_value(),
               qPrintable("unexpected file in checkpoints/: " + QString::fromStdString(name)));
      try {
        (void)mrcnn::train::readCheckpoint(entry.path());
      } catch (const std::exception& e) {
        QFAIL(qPrintable(QString("a torn checkpoint is visible after the kill: ") + e.what()));
      }
    }
    QString last_error;
    const uint64_t resume_step = resumeStepOf(checkpoints, &last_error);
    QVERIFY2(last_error.isEmpty(), qPrintable(last_error));
    qInfo("killed run: %.1f s; left in checkpoints/: %s; resumes from step %llu", killed_seconds,
          qPrintable(left.join(", ")), static_cast<unsigned long long>(resume_step));
    QVERIFY(resume_step >= kSaveEvery && resume_step < kTotalSteps);

    // A save torn by a kill leaves a hidden temporary file; plant one for the next checkpoint
    // (half of a real one) so that the restart must ignore and remove it.
    const fs::path resume_file = checkpoints / mrcnn::train::checkpointFileName(resume_step);
    const fs::path torn =
        checkpoints /
        ("." + mrcnn::train::checkpointFileName(resume_step + kSaveEvery) + ".partial");
    {
      QFile in(QString::fromStdString(resume_file.string()));
      QVERIFY(in.open(QIODevice::ReadOnly));
      const QByteArray bytes = in.readAll();
      QFile out(QString::fromStdString(torn.string()));
      QVERIFY(out.open(QIODevice::WriteOnly));
      out.write(bytes.left(bytes.size() / 2));
    }

    // (c) Restarted on the same run directory: resumes and finishes.
    const EngineRun resumed = runEngine(engineArgs(run_b, data_root, sets));
    QVERIFY2(resumed.finished && resumed.exit_code == 0, qPrintable(resumed.tail()));
    const auto starts = resumed.ofType("start");
    QVERIFY2(starts.size() == 1, qPrintable(resumed.tail()));
    QCOMPARE(starts[0].start_step(), resume_step);
    const auto done = resumed.ofType("done");
    QVERIFY2(done.size() == 1 && done[0].status() == "ok", qPrintable(resumed.tail()));
    QVERIFY2(hiddenFiles(checkpoints).isEmpty(),
             qPrintable("temporary files of a killed save left after the restart: " +
                        hiddenFiles(checkpoints).join(", ")));
    const auto first_progress = resumed.ofType("progress");
    QVERIFY(!first_progress.empty());
    QCOMPARE(first_progress.front().step(), resume_step + 1);
    qInfo("resumed run: %.1f s", static_cast<double>(clock.restart()) / 1000);

    // The losses of every step the resumed run took equal the uninterrupted run's (the first
    // one that does not points at where the streams part).
    const auto losses_a = lossesByStep(a);
    const auto losses_b = lossesByStep(resumed);
    for (const auto& [step, loss] : losses_b) {
      QVERIFY2(losses_a.count(step), "a step the uninterrupted run did not report");
      if (losses_a.at(step) != loss) {
        qWarning("step %llu: total loss %.17g resumed, %.17g uninterrupted",
                 static_cast<unsigned long long>(step), loss, losses_a.at(step));
      }
    }

    // The final checkpoints, tensor by tensor.
    const auto ca = finalCheckpoint(run_a);
    const auto cb = finalCheckpoint(run_b);
    QCOMPARE(ca.step, static_cast<uint64_t>(kTotalSteps));
    int compared = 0;
    const QStringList diffs = checkpointDifferences(cb, ca, &compared);
    qInfo(
        "compared %d tensors of the final checkpoints (model parameters and buffers, "
        "momentum buffers, loss scaler, RNG): %lld differ",
        compared, static_cast<long long>(diffs.size()));
    for (const QString& d : diffs)
      qWarning("%s", qPrintable(d));
    QVERIFY2(compared > 100, "too few tensors compared: is the checkpoint complete?");
    QVERIFY2(diffs.isEmpty(), qPrintable("the resumed run's weights differ from the "
                                         "uninterrupted run's:\n" +
                                         diffs.join("\n")));
    for (const auto& [step, loss] : losses_b)
      QCOMPARE(loss, losses_a.at(step));

    // The final evaluation sees the same weights, so it must find the same numbers.
    const auto eval_a = a.ofType("eval"), eval_b = resumed.ofType("eval");
    QVERIFY(!eval_a.empty() && !eval_b.empty());
    QCOMPARE(eval_b.back().step(), eval_a.back().step());
    QCOMPARE(eval_b.back().bbox().stats_size(), eval_a.back().bbox().stats_size());
    for (int i = 0; i < eval_a.back().bbox().stats_size(); ++i) {
      QCOMPARE(eval_b.back().bbox().stats(i), eval_a.back().bbox().stats(i));
      QCOMPARE(eval_b.back().segm().stats(i), eval_a.back().segm().stats(i));
    }

    // (d) Uninterrupted without the evaluation at step 6: an evaluation must not move
    // training (its random stream, the model's mode or its statistics).
    if (!check_eval_independence) return;
    clock.restart();
    const QString run_c = tmp.filePath("no-midway-eval");
    const EngineRun c = runEngine(engineArgs(run_c, data_root, sets, /*evaluate_midway=*/false));
    QVERIFY2(c.finished && c.exit_code == 0, qPrintable(c.tail()));
    QCOMPARE(c.ofType("eval").size(), size_t{1});  // the final one only
    int compared_c = 0;
    const QStringList diffs_c = checkpointDifferences(finalCheckpoint(run_c), ca, &compared_c);
    qInfo("run without the evaluation at step %d: %.1f s; %lld of %d tensors differ", kEvalEvery,
          static_cast<double>(clock.elapsed()) / 1000, static_cast<long long>(diffs_c.size()),
          compared_c);
    QVERIFY2(diffs_c.isEmpty(), qPrintable("evaluating at step " + QString::number(kEvalEvery) +
                                           " changed training:\n" + diffs_c.join("\n")));
  }
};

QTEST_GUILESS_MAIN(ResumeKillTest)
#include "test_resume_kill.moc"

#include "ui/run_monitor/run_model.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <algorithm>
#include <csignal>
#include <cstring>

#include "specs/events.h"
#include "io/transfer_text.h"

namespace mrcnn::ui {
namespace {

// The engine's exit codes (engine/exit_codes.h; the GUI does not include the engine).
QString exitCodeMeaning(int code) {
  switch (code) {
    case 0:
      return QStringLiteral("done");
    case 1:
      return QStringLiteral("the task failed while running");
    case 2:
      return QStringLiteral("bad command line");
    case 3:
      return QStringLiteral("the spec has errors");
    case 4:
      return QStringLiteral("a dataset, checkpoint or path cannot be used");
    case 127:
      return QStringLiteral("the engine could not be executed");
    default:
      if (code > 128 && code < 128 + 65)
        return QStringLiteral("killed by signal %1").arg(code - 128);
      return QStringLiteral("unknown exit code");
  }
}

QString clipped(const QString& text, int max = 160) {
  return text.size() <= max ? text : text.left(max - 1) + QChar(0x2026);
}

}  // namespace

void Series::add(double step, double value) {
  if (!steps.isEmpty() && step <= steps.last()) truncateAfter(step);
  if (!steps.isEmpty() && steps.last() == step) {
    values.last() = value;
    return;
  }
  steps.append(step);
  values.append(value);
}

void Series::truncateAfter(double step) {
  // Steps are increasing: the first point past `step` and everything after it go.
  const auto it = std::upper_bound(steps.begin(), steps.end(), step);
  const auto keep = static_cast<int>(it - steps.begin());
  steps.resize(keep);
  values.resize(keep);
}

const QStringList& cocoStatNames() {
  static const QStringList names = {"AP",  "AP50", "AP75",  "APs", "APm", "APl",
                                    "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"};
  return names;
}

const QVector<SeriesInfo>& seriesCatalog() {
  static const QVector<SeriesInfo> catalog = [] {
    QVector<SeriesInfo> c = {
        {"loss_total", "Total loss"},
        {"loss_rpn_objectness", "RPN objectness loss"},
        {"loss_rpn_box", "RPN box loss"},
        {"loss_fast_rcnn_class", "Fast R-CNN class loss"},
        {"loss_fast_rcnn_box", "Fast R-CNN box loss"},
        {"loss_mask", "Mask loss"},
        {"lr", "Learning rate"},
        {"images_per_second", "Images/s"},
        {"data_wait_share", "Data wait share"},
        {"memory_rss_mib", "Engine memory (MiB)"},
        {"memory_device_mib", "Device memory (MiB)"},
        {"loss_scale", "Loss scale"},
        {"skipped_steps", "Skipped steps"},
        {"val_loss_total", "Validation total loss"},
        {"val_loss_rpn_objectness", "Validation RPN objectness loss"},
        {"val_loss_rpn_box", "Validation RPN box loss"},
        {"val_loss_fast_rcnn_class", "Validation Fast R-CNN class loss"},
        {"val_loss_fast_rcnn_box", "Validation Fast R-CNN box loss"},
        {"val_loss_mask", "Validation mask loss"},
    };
    for (const char* iou : {"bbox", "segm"}) {
      for (const QString& stat : cocoStatNames())
        c.append({QStringLiteral("%1_%2").arg(iou, stat), QStringLiteral("%1 %2").arg(iou, stat)});
    }
    return c;
  }();
  return catalog;
}

QString statusName(RunStatus status) {
  switch (status) {
    case RunStatus::NotStarted:
      return QStringLiteral("starting");
    case RunStatus::Running:
      return QStringLiteral("running");
    case RunStatus::Stopping:
      return QStringLiteral("stopping");
    case RunStatus::Ok:
      return QStringLiteral("done");
    case RunStatus::Stopped:
      return QStringLiteral("stopped");
    case RunStatus::Failed:
      return QStringLiteral("failed");
    case RunStatus::Crashed:
      return QStringLiteral("crashed");
    case RunStatus::Unreadable:
      return QStringLiteral("unreadable");
  }
  return {};
}

QString runOfCheckpoint(const QString& weights) {
  if (weights.isEmpty()) return {};
  QDir dir = QFileInfo(weights).absoluteDir();
  if (dir.dirName() != QStringLiteral("checkpoints") || !dir.cdUp()) return {};
  return dir.exists(QStringLiteral("spec.txt")) ? dir.absolutePath() : QString();
}

bool isFinished(RunStatus status) {
  return status == RunStatus::Ok || status == RunStatus::Stopped || status == RunStatus::Failed ||
         status == RunStatus::Crashed || status == RunStatus::Unreadable;
}

QString ProcessExit::description() const {
  if (signal) {
    const char* name = ::strsignal(exit_code);
    return QStringLiteral("signal %1 (%2)")
        .arg(exit_code)
        .arg(QString::fromLocal8Bit(name ? name : "?"));
  }
  return QStringLiteral("exit code %1 (%2)").arg(exit_code).arg(exitCodeMeaning(exit_code));
}

LineResult RunModel::addLine(const QString& line) {
  LineResult result;
  const QString trimmed = line.trimmed();
  if (trimmed.isEmpty()) return result;
  std::string error;
  const QByteArray utf8 = trimmed.toUtf8();
  const auto event = events::parseJsonLine(std::string_view(utf8.constData(), utf8.size()), &error);
  if (!event) {
    ++warning_count_;
    result.warning = QStringLiteral("not an event (%1): %2")
                         .arg(QString::fromStdString(error), clipped(trimmed, 80));
    return result;
  }
  if (event->v() > events::kProtocolVersion) {
    result.warning = QStringLiteral(
                         "event of protocol version %1 (this workbench reads %2); "
                         "reading the fields it knows")
                         .arg(event->v())
                         .arg(events::kProtocolVersion);
  }
  addEvent(*event);
  result.event = true;
  return result;
}

void RunModel::addPoint(const QString& key, double step, double value) {
  series_[key].add(step, value);
}

void RunModel::addLosses(const QString& prefix, double step, const events::Losses& l) {
  addPoint(prefix + "total", step, l.total());
  addPoint(prefix + "rpn_objectness", step, l.rpn_objectness());
  addPoint(prefix + "rpn_box", step, l.rpn_box());
  addPoint(prefix + "fast_rcnn_class", step, l.fast_rcnn_class());
  addPoint(prefix + "fast_rcnn_box", step, l.fast_rcnn_box());
  addPoint(prefix + "mask", step, l.mask());
}

void RunModel::addEvent(const events::Event& e) {
  ++event_count_;
  const QString type = QString::fromStdString(e.type());
  const auto text = [](const std::string& s) { return QString::fromStdString(s); };
  // A download is shown until it ends or the task moves on.
  if (type != QLatin1String("download") && type != QLatin1String("log")) download_.clear();

  if (type == "start") {
    // A new start (a resumed run) begins a new leg: what it repeats after its checkpoint goes.
    status_ = RunStatus::Running;
    done_seen_ = false;
    done_status_.clear();
    exit_.reset();
    last_error_.clear();
    summary_.clear();
    task_ = text(e.task());
    device_ = text(e.device());
    world_size_ = std::max(1, static_cast<int>(e.world_size()));
    if (!e.spec_path().empty()) spec_path_ = text(e.spec_path());
    if (!e.run_dir().empty()) run_dir_ = text(e.run_dir());
    total_steps_ = static_cast<double>(e.total_steps());
    step_ = static_cast<double>(e.start_step());
    eta_seconds_ = -1;
    rate_step0_ = step_;
    rate_time0_ = e.time();
    // Only training resumes; an evaluation on a training run's directory keeps its curves.
    if (task_ == QLatin1String("train")) {
      for (auto& s : series_)
        s.truncateAfter(step_);
    }
    log_.append(QStringLiteral("start: %1 on %2%3%4")
                    .arg(task_, device_.isEmpty() ? QStringLiteral("?") : device_,
                         e.world_size() > 1 ? QStringLiteral(" × %1 processes").arg(e.world_size())
                                            : QString(),
                         e.start_step() > 0
                             ? QStringLiteral(", resuming at step %1").arg(e.start_step())
                             : QString()));
    // A resume with a changed spec: each change, as it applies from here.
    for (const events::SpecChange& c : e.spec_changes())
      log_.append(QStringLiteral("  changed: %1: %2 -> %3").arg(text(c.field()), text(c.before()), text(c.after())));
  } else if (type == "progress") {
    const double step = static_cast<double>(e.step());
    step_ = step;
    if (status_ == RunStatus::NotStarted) status_ = RunStatus::Running;
    // Only training's progress is plotted against training steps: an inference run in the
    // same directory counts images in its steps.
    const bool training = task_.isEmpty() || task_ == QLatin1String("train");
    if (training && e.has_losses()) addLosses("loss_", step, e.losses());
    if (training && e.lr() > 0) addPoint("lr", step, e.lr());
    if (training && e.images_per_second() > 0)
      addPoint("images_per_second", step, e.images_per_second());
    if (training && (e.has_losses() || e.images_per_second() > 0))
      addPoint("data_wait_share", step, e.data_wait_share());
    if (training && e.has_memory()) {
      addPoint("memory_rss_mib", step, e.memory().rss_mib());
      if (e.memory().device_mib() > 0) addPoint("memory_device_mib", step, e.memory().device_mib());
    }
    if (e.loss_scale() > 0) addPoint("loss_scale", step, e.loss_scale());
    if (e.skipped_steps() > 0 || series_.contains("skipped_steps"))
      addPoint("skipped_steps", step, static_cast<double>(e.skipped_steps()));

    if (e.eta_seconds() > 0) {
      eta_seconds_ = e.eta_seconds();
    } else if (total_steps_ > 0 && e.time() > 0) {
      if (rate_step0_ < 0 || rate_time0_ <= 0) {
        rate_step0_ = step;
        rate_time0_ = e.time();
      } else if (step > rate_step0_ && e.time() > rate_time0_) {
        const double per_step = (e.time() - rate_time0_) / (step - rate_step0_);
        eta_seconds_ = std::max(0.0, (total_steps_ - step) * per_step);
      }
    }
  } else if (type == "eval") {
    const double step = static_cast<double>(e.step());
    for (const auto& [prefix, stats] :
         {std::pair<QString, const events::CocoStats*>{"bbox", &e.bbox()},
          std::pair<QString, const events::CocoStats*>{"segm", &e.segm()}}) {
      const int n = std::min<int>(stats->stats_size(), static_cast<int>(cocoStatNames().size()));
      for (int i = 0; i < n; ++i)
        addPoint(prefix + "_" + cocoStatNames()[i], step, stats->stats(i));
    }
    if (e.has_val_losses()) addLosses("val_loss_", step, e.val_losses());
    last_eval_step_ = step;
    last_bbox_ap_ = e.bbox().stats_size() > 0 ? e.bbox().stats(0) : -1;
    last_segm_ap_ = e.segm().stats_size() > 0 ? e.segm().stats(0) : -1;
    QString line = QStringLiteral("eval at step %1").arg(e.step());
    if (e.images() > 0) line += QStringLiteral(" on %1 images").arg(e.images());
    if (e.bbox().stats_size() > 0)
      line += QStringLiteral(": bbox AP %1").arg(e.bbox().stats(0), 0, 'f', 4);
    if (e.segm().stats_size() > 0)
      line += QStringLiteral(", segm AP %1").arg(e.segm().stats(0), 0, 'f', 4);
    if (e.has_val_losses())
      line += QStringLiteral(", validation loss %1").arg(e.val_losses().total(), 0, 'f', 4);
    log_.append(line);
  } else if (type == "checkpoint") {
    last_checkpoint_ = text(e.path());
    last_checkpoint_step_ = static_cast<double>(e.step());
    // Progress comes every logging_frequency steps; a stop's checkpoint may be after the last.
    if (task_.isEmpty() || task_ == QLatin1String("train"))
      step_ = std::max(step_, last_checkpoint_step_);
    if (e.best()) best_checkpoint_ = last_checkpoint_;
    log_.append(QStringLiteral("checkpoint at step %1: %2%3")
                    .arg(e.step())
                    .arg(last_checkpoint_, e.best() ? QStringLiteral(" (best)") : QString()));
  } else if (type == "warning") {
    ++engine_warning_count_;
    log_.append(QStringLiteral("warning [%1]: %2").arg(text(e.code()), text(e.message())));
  } else if (type == "error") {
    last_error_ = e.code().empty()
                      ? text(e.message())
                      : QStringLiteral("[%1] %2").arg(text(e.code()), text(e.message()));
    log_.append(QStringLiteral("error: ") + last_error_);
  } else if (type == "done") {
    done_seen_ = true;
    done_status_ = text(e.status());
    summary_ = text(e.summary());
    if (done_status_ == "ok")
      status_ = RunStatus::Ok;
    else if (done_status_ == "stopped")
      status_ = RunStatus::Stopped;
    else
      status_ = RunStatus::Failed;
    eta_seconds_ = -1;
    log_.append(QStringLiteral("done: %1%2")
                    .arg(done_status_, summary_.isEmpty() ? QString() : " — " + summary_));
  } else if (type == "download") {
    const events::Download& d = e.download();
    const QString line = QStringLiteral("Downloading %1: %2")
                             .arg(text(d.name()),
                                  text(io::transferText(d.bytes(), d.total_bytes(),
                                                        d.bytes_per_second(), d.eta_seconds(),
                                                        d.done())));
    download_ = d.done() ? QString() : line;
    if (d.done()) log_.append(line);
  } else if (type == "log") {
    // The engine's free text may end in a newline of its own; the log adds one per entry.
    QString t = text(e.text());
    while (t.endsWith(u'\n'))
      t.chop(1);
    log_.append(t);
  } else {
    ++warning_count_;
    log_.append(QStringLiteral("(event of unknown type \"%1\" ignored)").arg(type));
  }
}

std::optional<RunModel::Loaded> RunModel::loadFile(const QString& runDirOrFile, QString* error) {
  // A run directory, or the events file itself (a path that does not exist is taken as
  // a directory, so the message names the file that was looked for).
  const QFileInfo info(runDirOrFile);
  const bool file_given = info.isFile() || (!info.exists() && runDirOrFile.endsWith(".jsonl"));
  const QString path = file_given ? runDirOrFile : QDir(runDirOrFile).filePath("events.jsonl");
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) {
    if (error) *error = QStringLiteral("%1: cannot read: %2").arg(path, file.errorString());
    return std::nullopt;
  }
  Loaded loaded;
  loaded.model.run_dir_ = QFileInfo(path).absolutePath();
  const QString name = QFileInfo(path).fileName();
  loaded.path = path;
  int number = 0;
  while (!file.atEnd()) {
    const QByteArray bytes = file.readLine();
    ++number;
    if (!bytes.endsWith('\n') &&
        !events::parseJsonLine(std::string_view(bytes.constData(), bytes.size()))) {
      // The last line, unfinished: the engine was killed while writing it, or is writing it
      // now (a follower reads it whole later, from loaded.bytes on).
      loaded.warnings.append(QStringLiteral("%1:%2: the last line is incomplete: %3")
                                 .arg(name)
                                 .arg(number)
                                 .arg(clipped(QString::fromUtf8(bytes).trimmed(), 80)));
      break;
    }
    loaded.bytes += bytes.size();
    const QString line = QString::fromUtf8(bytes);
    const LineResult r = loaded.model.addLine(line);
    if (!r.warning.isEmpty())
      loaded.warnings.append(QStringLiteral("%1:%2: %3").arg(name).arg(number).arg(r.warning));
  }
  // A run that never said it was done and has no process behind it was cut short (the
  // engine or the machine died); the events cannot tell which.
  if (loaded.model.status_ == RunStatus::Running || loaded.model.status_ == RunStatus::Stopping) {
    loaded.cut_short = true;
    loaded.model.cut_short_ = true;
    loaded.model.status_ = RunStatus::Crashed;
    if (loaded.model.last_error_.isEmpty())
      loaded.model.last_error_ = QStringLiteral(
          "the events end without a done event (the engine was killed or is still running "
          "elsewhere)");
  }
  return loaded;
}

bool RunModel::setFollowed() {
  if (!cut_short_ || status_ != RunStatus::Crashed) return false;
  cut_short_ = false;
  followed_ = true;
  status_ = RunStatus::Running;
  last_error_.clear();
  return true;
}

void RunModel::setProcessExit(const ProcessExit& exit) {
  exit_ = exit;
  eta_seconds_ = -1;
  if (exit.signal) {
    status_ = RunStatus::Crashed;
  } else if (exit.exit_code == 0 && done_seen_) {
    // The done event already set Ok, Stopped or Failed.
  } else if (exit.exit_code != 0 && done_seen_) {
    status_ = RunStatus::Failed;  // the engine said so and ended on its own terms
  } else {
    // A non-zero exit, or a zero one, without a done event: the engine did not finish its
    // task the way it reports finishing.
    status_ = RunStatus::Crashed;
  }
  if (last_error_.isEmpty() && status_ != RunStatus::Ok && status_ != RunStatus::Stopped) {
    last_error_ = !last_stderr_.isEmpty() ? last_stderr_
                  : done_seen_
                      ? QStringLiteral("the engine ended with status \"%1\"").arg(done_status_)
                      : QStringLiteral("the engine ended without a done event");
  }
  log_.append(QStringLiteral("the engine ended: %1").arg(exit.description()));
}

void RunModel::setStartFailure(const QString& message) {
  status_ = RunStatus::Crashed;
  last_error_ = message;
  log_.append(message);
}

void RunModel::setLaunching() {
  status_ = RunStatus::NotStarted;
  done_seen_ = false;
  done_status_.clear();
  exit_.reset();
  last_error_.clear();
  last_stderr_.clear();
  queue_.clear();
  summary_.clear();
  eta_seconds_ = -1;
}

void RunModel::setUnreadable(const QString& message) {
  status_ = RunStatus::Unreadable;
  last_error_ = message;
  log_.append(message);
}

void RunModel::setStopping() {
  if (!isFinished(status_)) status_ = RunStatus::Stopping;
}

void RunModel::appendLog(const QString& line) {
  log_.append(line);
}

void RunModel::appendStderr(const QString& line) {
  log_.append(line);
  if (!line.trimmed().isEmpty()) last_stderr_ = line.trimmed();
  // A job of a SLURM host waiting in its queue (the launcher's "mrcnn-workbench: job 12 on
  // cluster: PENDING (Resources)"): the status line until the engine starts.
  static const QRegularExpression queued(QStringLiteral(R"(^mrcnn-workbench: (job \S+ on \S+: .+)$)"));
  if (const QRegularExpressionMatch m = queued.match(line.trimmed()); m.hasMatch()) {
    queue_ = m.captured(1);
    queue_[0] = queue_[0].toUpper();
  }
}

const Series* RunModel::series(const QString& key) const {
  const auto it = series_.constFind(key);
  return it == series_.constEnd() ? nullptr : &it.value();
}

double RunModel::progress() const {
  if (total_steps_ <= 0) return -1;
  return std::clamp(step_ / total_steps_, 0.0, 1.0);
}

QString RunModel::detailsLine() const {
  QStringList parts;
  if (!last_checkpoint_.isEmpty()) {
    QString c = QStringLiteral("checkpoint: %1 (step %2)")
                    .arg(QFileInfo(last_checkpoint_).fileName())
                    .arg(last_checkpoint_step_);
    if (!best_checkpoint_.isEmpty() && best_checkpoint_ != last_checkpoint_)
      c += QStringLiteral(", best: %1").arg(QFileInfo(best_checkpoint_).fileName());
    else if (!best_checkpoint_.isEmpty())
      c += QStringLiteral(", the best");
    parts << c;
  }
  if (last_eval_step_ >= 0) {
    QString e = QStringLiteral("eval at step %1:").arg(last_eval_step_);
    if (last_bbox_ap_ >= 0) e += QStringLiteral(" bbox AP %1").arg(last_bbox_ap_, 0, 'f', 3);
    if (last_segm_ap_ >= 0) e += QStringLiteral(", segm AP %1").arg(last_segm_ap_, 0, 'f', 3);
    parts << e;
  }
  if (engine_warning_count_ > 0)
    parts
        << QStringLiteral("%1 warning(s) from the engine (see the log)").arg(engine_warning_count_);
  return parts.join(QStringLiteral(" · "));
}

QString RunModel::statusLine() const {
  switch (status_) {
    case RunStatus::Ok:
      return summary_.isEmpty() ? QStringLiteral("Done.")
                                : QStringLiteral("Done: %1").arg(summary_);
    case RunStatus::Stopped:
      return QStringLiteral("Stopped at step %1; Resume continues from its last checkpoint.")
          .arg(step_);
    case RunStatus::Failed:
    case RunStatus::Crashed: {
      QString s = status_ == RunStatus::Failed ? QStringLiteral("The task failed")
                                               : QStringLiteral("The engine crashed");
      if (exit_) s += QStringLiteral(" (%1)").arg(exit_->description());
      if (!last_error_.isEmpty()) s += QStringLiteral(": ") + last_error_;
      return s;
    }
    case RunStatus::Unreadable:
      // A followed run whose events went away says what it lost, not that it cannot open.
      return followed_ ? last_error_ : QStringLiteral("Cannot open this run: %1").arg(last_error_);
    case RunStatus::Stopping:
      return QStringLiteral("Stopping: the engine finishes its step and writes a checkpoint…");
    case RunStatus::Running:
      if (!download_.isEmpty()) return download_;
      return followed_
                 ? QStringLiteral("Running %1 on %2, started elsewhere: following its events.jsonl")
                       .arg(task_, device_)
                 : QStringLiteral("Running %1 on %2").arg(task_, device_);
    case RunStatus::NotStarted:
      if (!download_.isEmpty()) return download_;
      return queue_.isEmpty() ? QStringLiteral("Starting the engine…") : queue_;
  }
  return {};
}

}  // namespace mrcnn::ui

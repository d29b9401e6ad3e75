#include "ui/run_monitor/runs_view.h"

#include <QApplication>
#include <QCheckBox>
#include <QDateTime>
#include <QDir>
#include <QEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPainter>
#include <QPlainTextEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSlider>
#include <QSplitter>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "ui/run_monitor/engine_process.h"
#include "ui/run_monitor/run_model.h"
#include "ui/run_monitor/run_plot.h"
#include "ui/run_monitor/series_csv.h"

namespace mrcnn::ui {
namespace {

QString formatDuration(double seconds) {
  const auto s = static_cast<qint64>(std::llround(seconds));
  if (s >= 3600) return QStringLiteral("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
  if (s >= 60) return QStringLiteral("%1 min %2 s").arg(s / 60).arg(s % 60);
  return QStringLiteral("%1 s").arg(s);
}

bool isDark(const QPalette& p) {
  return p.color(QPalette::Window).lightness() < 128;
}

}  // namespace

struct RunsView::Run {
  QString dir;
  QString name;
  RunModel model;
  EngineProcess* process = nullptr;  // owned by the view (QObject child)
  QTreeWidgetItem* item = nullptr;
  int serial = 0;
  // Following an events.jsonl another engine appends to (empty path: not following).
  QString follow_path;
  qint64 follow_offset = 0;
};

RunsView::RunsView(QWidget* parent) : QWidget(parent) {
  refresh_timer_.setSingleShot(true);
  refresh_timer_.setInterval(kRefreshIntervalMs);
  connect(&refresh_timer_, &QTimer::timeout, this, &RunsView::refreshNow);
  stop_all_deadline_.setSingleShot(true);
  connect(&stop_all_deadline_, &QTimer::timeout, this, [this] {
    // The grace period is over: a second stop kills what still runs.
    for (auto& run : runs_)
      if (run->process && run->process->isRunning()) run->process->stop();
  });
  follow_timer_.setInterval(kFollowIntervalMs);
  connect(&follow_timer_, &QTimer::timeout, this, &RunsView::followRuns);
  buildUi();
  applyPalette();
}

RunsView::~RunsView() {
  // The processes stop their engines as they go (EngineProcess's destructor); their models
  // must outlive them.
  for (auto& run : runs_) {
    delete run->process;
    run->process = nullptr;
  }
}

QColor RunsView::runColour(int index) const {
  // Hues a golden angle apart stay distinct for many runs; lightness follows the palette so
  // the curves read on a dark background as well as on a light one.
  const double hue = std::fmod(0.58 + index * 0.381966, 1.0);
  return isDark(palette()) ? QColor::fromHslF(static_cast<float>(hue), 0.75f, 0.65f)
                           : QColor::fromHslF(static_cast<float>(hue), 0.80f, 0.38f);
}

void RunsView::applyPalette() {
  for (RunPlot* p : plots_)
    p->applyPalette(palette());
  for (auto& run : runs_) {
    if (run->item) {
      QPixmap swatch(12, 12);
      swatch.fill(runColour(run->serial));
      run->item->setIcon(kName, QIcon(swatch));
    }
  }
  selection_dirty_ = true;
  scheduleRefresh();
}

void RunsView::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange || event->type() == QEvent::ApplicationPaletteChange)
    applyPalette();
}

int RunsView::runCount() const {
  return static_cast<int>(runs_.size());
}

const RunModel* RunsView::run(int row) const {
  return row >= 0 && row < runCount() ? &runs_[row]->model : nullptr;
}

QString RunsView::runDir(int row) const {
  return row >= 0 && row < runCount() ? runs_[row]->dir : QString();
}

int RunsView::rowOf(const QString& runDir) const {
  const QString wanted = QDir::cleanPath(QFileInfo(runDir).absoluteFilePath());
  for (int i = 0; i < runCount(); ++i)
    if (!runs_[i]->dir.isEmpty() && runs_[i]->dir == wanted) return i;
  return -1;
}

EngineProcess* RunsView::engine(int row) const {
  return row >= 0 && row < runCount() ? runs_[row]->process : nullptr;
}

int RunsView::currentRow() const {
  return current_;
}

int RunsView::runningEngines() const {
  int n = 0;
  for (const auto& run : runs_)
    if (run->process && run->process->isRunning()) ++n;
  return n;
}

void RunsView::selectRows(const QList<int>& rows) {
  list_->clearSelection();
  for (int r : rows)
    if (r >= 0 && r < runCount()) runs_[r]->item->setSelected(true);
  if (!rows.isEmpty() && rows.first() >= 0 && rows.first() < runCount())
    list_->setCurrentItem(runs_[rows.first()]->item, 0, QItemSelectionModel::NoUpdate);
  onSelectionChanged();
}

RunPlot* RunsView::plot(const QString& seriesKey) const {
  for (RunPlot* p : plots_)
    if (!p->spec().keys.isEmpty() && p->spec().keys.first() == seriesKey) return p;
  return nullptr;
}

int RunsView::addRun(std::unique_ptr<Run> run) {
  run->serial = run_serial_++;
  run->item = new QTreeWidgetItem(list_);
  runs_.push_back(std::move(run));
  updateRunItem(*runs_.back());
  applyPalette();
  return runCount() - 1;
}

EngineProcess* RunsView::ensureProcess(Run& run) {
  if (run.process) return run.process;
  run.process = new EngineProcess(&run.model, this);
  Run* raw = &run;
  connect(run.process, &EngineProcess::modelChanged, this, [this, raw] {
    // A run started with no directory learns it from its start event.
    if (raw->dir.isEmpty() && !raw->model.runDir().isEmpty()) {
      raw->dir = QDir::cleanPath(QFileInfo(raw->model.runDir()).absoluteFilePath());
      raw->name = QFileInfo(raw->dir).fileName();
    }
    scheduleRefresh();
  });
  connect(run.process, &EngineProcess::finished, this, [this, raw] {
    scheduleRefresh();
    // A spec a host's engine refused: its messages, for the Problems list.
    const EngineProcess::Options& o = raw->process->options();
    // The engine's exit codes (engine/exit_codes.h): the spec has errors, its data is missing.
    constexpr int kSpecHasErrors = 3, kBadData = 4;
    const std::optional<ProcessExit> exit = raw->model.processExit();
    if (!o.host.isEmpty() && exit && !exit->signal &&
        (exit->exit_code == kSpecHasErrors || exit->exit_code == kBadData))
      emit hostRefusedSpec(o.spec_path, o.host, raw->model.log());
    emit runFinished(raw->dir);
    if (stopping_all_ && runningEngines() == 0) {
      stopping_all_ = false;
      stop_all_deadline_.stop();
      emit allEnginesStopped();
    }
  });
  return run.process;
}

void RunsView::startRun(const QString& specPath, const QString& task, const QString& runDir,
                        const QStringList& overrides, const QStringList& taskArguments) {
  const QString dir =
      runDir.isEmpty() ? QString() : QDir::cleanPath(QFileInfo(runDir).absoluteFilePath());
  int row = dir.isEmpty() ? -1 : rowOf(dir);
  if (row >= 0 && runs_[row]->process && runs_[row]->process->isRunning()) {
    runs_[row]->model.appendLog(
        tr("This run directory is in use by a running engine; stop it first."));
    selectRows({row});
    scheduleRefresh();
    return;
  }
  if (row < 0) {
    auto run = std::make_unique<Run>();
    run->dir = dir;
    run->name = dir.isEmpty() ? QFileInfo(specPath).completeBaseName() : QFileInfo(dir).fileName();
    // Training again on a directory resumes it: show the curves it already has.
    if (!dir.isEmpty() && QFileInfo::exists(QDir(dir).filePath("events.jsonl"))) {
      if (auto loaded = RunModel::loadFile(dir)) {
        run->model = std::move(loaded->model);
        for (const QString& w : loaded->warnings)
          run->model.appendLog(w);
      }
    }
    row = addRun(std::move(run));
  }
  Run& run = *runs_[row];
  run.follow_path.clear();  // this window runs it now
  EngineProcess::Options options;
  options.spec_path = specPath;
  options.task = task.isEmpty() ? QStringLiteral("train") : task;
  options.run_dir = dir;
  options.overrides = overrides;
  options.task_arguments = taskArguments;
  if (options.task == QLatin1String("train")) {
    options.nproc_per_node = train_host_.isEmpty() ? train_processes_ : 1;
    options.host = train_host_;
  }
  ensureProcess(run)->start(options);
  selectRows({row});
  emit runStarted(dir);
}

void RunsView::openRun(const QString& runDir) {
  const QString dir = QDir::cleanPath(QFileInfo(runDir).absoluteFilePath());
  int row = rowOf(dir);
  if (row >= 0 && runs_[row]->process && runs_[row]->process->isRunning()) {
    selectRows({row});  // it is live here already
    return;
  }
  QString error;
  auto loaded = RunModel::loadFile(dir, &error);
  if (row < 0) {
    auto run = std::make_unique<Run>();
    run->dir = dir;
    run->name = QFileInfo(dir).fileName();
    row = addRun(std::move(run));
  }
  Run& run = *runs_[row];
  if (loaded) {
    delete run.process;  // the model it pointed at is replaced
    run.process = nullptr;
    run.model = std::move(loaded->model);
    for (const QString& w : loaded->warnings)
      run.model.appendLog(w);
    if (!loaded->warnings.isEmpty())
      run.model.appendLog(
          tr("%n line(s) of events.jsonl could not be used", "", loaded->warnings.size()));
    run.follow_path.clear();
    const QDateTime changed = QFileInfo(loaded->path).lastModified();
    if (loaded->cut_short && changed.secsTo(QDateTime::currentDateTime()) < kFollowRecentSeconds &&
        run.model.setFollowed()) {
      run.follow_path = loaded->path;
      run.follow_offset = loaded->bytes;
      run.model.appendLog(tr("Following %1: its engine runs elsewhere").arg(loaded->path));
      follow_timer_.start();
    }
  } else {
    run.model.setUnreadable(error);
  }
  selectRows({row});
  emit runOpened(dir);
}

void RunsView::followRuns() {
  bool any = false;
  for (auto& run : runs_) {
    if (run->follow_path.isEmpty()) continue;
    QFile file(run->follow_path);
    if (!file.open(QIODevice::ReadOnly) || file.size() < run->follow_offset) {
      // Gone or rewritten: what was read stays, following ends, and the run says why.
      run->model.setUnreadable(
          (file.exists() ? tr("Stopped following %1: it was rewritten (%2 bytes, %3 read)")
                               .arg(run->follow_path)
                               .arg(file.size())
                               .arg(run->follow_offset)
                         : tr("Stopped following %1: it was deleted, or its run directory")
                               .arg(run->follow_path)));
      run->follow_path.clear();
      scheduleRefresh();
      continue;
    }
    file.seek(run->follow_offset);
    const QByteArray bytes = file.readAll();
    const qsizetype end = bytes.lastIndexOf('\n') + 1;  // complete lines only
    for (const QByteArray& line : bytes.left(end).split('\n')) {
      if (line.isEmpty()) continue;
      const LineResult r = run->model.addLine(QString::fromUtf8(line));
      if (!r.warning.isEmpty()) run->model.appendLog(r.warning);
    }
    run->follow_offset += end;
    if (end > 0) scheduleRefresh();
    if (isFinished(run->model.status()))
      run->follow_path.clear();  // it said done
    else
      any = true;
  }
  if (!any) follow_timer_.stop();
}

void RunsView::stopCurrent() {
  if (current_ < 0) return;
  if (EngineProcess* p = runs_[current_]->process; p && p->isRunning()) p->stop();
  scheduleRefresh();
}

void RunsView::stopAll(int timeoutMs) {
  if (runningEngines() == 0) {
    emit allEnginesStopped();
    return;
  }
  stopping_all_ = true;
  for (auto& run : runs_)
    if (run->process && run->process->isRunning() && run->process->stopRequests() == 0)
      run->process->stop();
  stop_all_deadline_.start(std::max(0, timeoutMs));
  scheduleRefresh();
}

void RunsView::resumeCurrent() {
  if (current_ < 0) return;
  Run& run = *runs_[current_];
  if (run.process && run.process->isRunning()) return;
  if (run.process && !run.process->options().run_dir.isEmpty()) {
    run.process->resume();
  } else {
    if (run.dir.isEmpty()) return;
    EngineProcess::Options options;
    options.run_dir = run.dir;
    options.task = QStringLiteral("train");
    options.spec_path = QDir(run.dir).filePath("spec.txt");
    options.nproc_per_node = run.model.worldSize();  // from its last start event
    // A run that went to a host (its remote.json): back there, with the spec it went with.
    QFile where(QDir(run.dir).filePath(QStringLiteral("remote.json")));
    if (where.open(QIODevice::ReadOnly)) {
      const QJsonObject remote = QJsonDocument::fromJson(where.readAll()).object();
      if (!remote.value("host").toString().isEmpty()) {
        options.host = remote.value("host").toString();
        options.spec_path = remote.value("spec").toString(options.spec_path);
        options.nproc_per_node = 1;
      }
    }
    ensureProcess(run)->start(options);
  }
  emit runStarted(run.dir);
  scheduleRefresh();
}

void RunsView::scheduleRefresh() {
  dirty_ = true;
  if (!refresh_timer_.isActive()) refresh_timer_.start();
}

void RunsView::onSelectionChanged() {
  const QTreeWidgetItem* item = list_->currentItem();
  current_ = -1;
  for (int i = 0; i < runCount(); ++i)
    if (runs_[i]->item == item) current_ = i;
  if (current_ < 0) {
    for (int i = 0; i < runCount(); ++i)
      if (runs_[i]->item->isSelected()) {
        current_ = i;
        break;
      }
  }
  selection_dirty_ = true;
  // A new selection is the user's action: answer it at once, not after the timer.
  refreshNow();
}

void RunsView::rebuildPlots() {
  QVector<PlotRun> shown;
  for (int i = 0; i < runCount(); ++i) {
    if (runs_[i]->item->isSelected())
      shown.append({runs_[i]->name, runColour(runs_[i]->serial), &runs_[i]->model});
  }
  if (shown.isEmpty() && current_ >= 0)
    shown.append(
        {runs_[current_]->name, runColour(runs_[current_]->serial), &runs_[current_]->model});
  // The runs' colours, named once for every plot.
  QStringList names;
  for (const PlotRun& r : shown)
    names.append(QStringLiteral("<span style=\"color:%1\">&#9632;</span>&nbsp;%2")
                     .arg(r.colour.name(), r.name.toHtmlEscaped()));
  legend_->setText(names.join(QStringLiteral("&nbsp;&nbsp;&nbsp;")));
  legend_->setVisible(shown.size() > 1);
  for (RunPlot* p : plots_) {
    p->setRuns(shown);
    p->setSmoothing(smoothing_);
    p->setLogScale(log_scale_->isChecked());
  }
}

void RunsView::refreshNow() {
  refresh_timer_.stop();
  if (selection_dirty_) {
    rebuildPlots();
    selection_dirty_ = false;
  }
  for (auto& run : runs_)
    updateRunItem(*run);
  for (RunPlot* p : plots_)
    p->refresh();
  ++replot_count_;
  updateCurrentPanel(false);
  dirty_ = false;
}

void RunsView::updateRunItem(Run& run) {
  const RunModel& m = run.model;
  run.item->setText(kName, run.name.isEmpty() ? tr("(run)") : run.name);
  run.item->setToolTip(kName, run.dir);
  run.item->setText(kTask, m.task());
  run.item->setText(kStatus, statusName(m.status()));
  run.item->setToolTip(kStatus, m.statusLine());
  run.item->setText(kStep, m.totalSteps() > 0
                               ? QStringLiteral("%1/%2").arg(m.step()).arg(m.totalSteps())
                               : QString::number(m.step()));
}

void RunsView::updateCurrentPanel(bool full_log) {
  const Run* run = current_ >= 0 ? runs_[current_].get() : nullptr;
  if (!run) {
    status_->setText(tr("No run selected. Start a task from a spec, or open a run directory."));
    status_->setStyleSheet({});
    details_->clear();
    details_->hide();
    progress_->setValue(0);
    progress_->setFormat(QString());
    stop_->setEnabled(false);
    resume_->setEnabled(false);
    prune_->setEnabled(false);
    export_->setEnabled(false);
    bring_back_->setVisible(false);
    log_->clear();
    shown_log_run_ = -1;
    return;
  }
  const RunModel& m = run->model;
  const RunStatus st = m.status();
  // A run sent to a host says where it runs (its device is the host's).
  const QString host = run->process ? run->process->options().host : QString();
  status_->setText(host.isEmpty() ? m.statusLine() : tr("On host %1: %2").arg(host, m.statusLine()));
  const QString details = m.detailsLine();
  details_->setText(details);
  details_->setVisible(!details.isEmpty());
  if (st == RunStatus::Failed || st == RunStatus::Crashed || st == RunStatus::Unreadable) {
    // A warning colour that keeps its contrast with the palette's window colour.
    const QColor warn = isDark(palette()) ? QColor::fromHslF(0.0f, 0.85f, 0.70f)
                                          : QColor::fromHslF(0.0f, 0.80f, 0.38f);
    status_->setStyleSheet(
        QStringLiteral("QLabel { color: %1; font-weight: bold; }").arg(warn.name()));
  } else {
    status_->setStyleSheet({});
  }

  const double fraction = m.progress();
  progress_->setValue(fraction >= 0 ? static_cast<int>(std::lround(fraction * 1000)) : 0);
  QString text = m.totalSteps() > 0 ? tr("step %1 / %2 (%3%)")
                                          .arg(m.step())
                                          .arg(m.totalSteps())
                                          .arg(fraction * 100, 0, 'f', 1)
                                    : tr("step %1").arg(m.step());
  if (m.etaSeconds() >= 0 && !isFinished(st))
    text += tr(" — ETA %1").arg(formatDuration(m.etaSeconds()));
  if (isFinished(st)) text += QStringLiteral(" — ") + statusName(st);
  progress_->setFormat(text);

  const bool running = run->process && run->process->isRunning();
  stop_->setEnabled(running);
  stop_->setText(running && run->process->stopRequests() > 0 ? tr("Kill") : tr("Stop"));
  const bool trainable = m.task().isEmpty() || m.task() == QLatin1String("train");
  resume_->setEnabled(
      !running && !run->dir.isEmpty() && trainable &&
      (st == RunStatus::Stopped || st == RunStatus::Failed || st == RunStatus::Crashed));
  const bool has_model = !running && !run->dir.isEmpty() && !m.lastCheckpoint().isEmpty() &&
                         QFileInfo::exists(QDir(run->dir).filePath(QStringLiteral("spec.txt")));
  prune_->setEnabled(has_model);
  export_->setEnabled(has_model);
  const bool remote = run->process && !run->process->options().host.isEmpty();
  bring_back_->setVisible(remote);
  bring_back_->setEnabled(remote && !run->dir.isEmpty());

  // The log grows by appending; a different run replaces it.
  const QStringList& lines = m.log();
  if (full_log || shown_log_run_ != current_ || shown_log_lines_ > lines.size()) {
    log_->setPlainText(lines.join('\n'));
    shown_log_run_ = current_;
    shown_log_lines_ = static_cast<int>(lines.size());
    log_->verticalScrollBar()->setValue(log_->verticalScrollBar()->maximum());
  } else if (shown_log_lines_ < lines.size()) {
    QScrollBar* bar = log_->verticalScrollBar();
    const bool at_end = bar->value() >= bar->maximum() - 2;
    log_->appendPlainText(lines.mid(shown_log_lines_).join('\n'));
    shown_log_lines_ = static_cast<int>(lines.size());
    if (at_end) bar->setValue(bar->maximum());
  }
}

void RunsView::setTrainProcesses(int count) {
  count = std::max(1, count);
  if (count == train_processes_) return;
  train_processes_ = count;
  emit trainProcessesChanged(count);
}

void RunsView::setTrainHost(const QString& host) {
  if (host == train_host_) return;
  train_host_ = host;
  emit trainHostChanged(host);
}

void RunsView::setSmoothing(double weight) {
  smoothing_ = std::clamp(weight, 0.0, 0.99);
  smoothing_label_->setText(QString::number(smoothing_, 'f', 2));
  if (smoothing_slider_->value() != static_cast<int>(std::lround(smoothing_ * 100))) {
    const QSignalBlocker block(smoothing_slider_);
    smoothing_slider_->setValue(static_cast<int>(std::lround(smoothing_ * 100)));
  }
  for (RunPlot* p : plots_)
    p->setSmoothing(smoothing_);
  scheduleRefresh();
}

void RunsView::setLogScale(bool on) {
  if (log_scale_->isChecked() != on) {
    const QSignalBlocker block(log_scale_);
    log_scale_->setChecked(on);
  }
  for (RunPlot* p : plots_) {
    p->setLogScale(on);
    p->resetView();
  }
  scheduleRefresh();
}

QString RunsView::statusText() const {
  return status_->text();
}
QString RunsView::detailsText() const {
  return details_->text();
}
QString RunsView::logText() const {
  return log_->toPlainText();
}
QString RunsView::progressText() const {
  return progress_->format();
}
bool RunsView::stopEnabled() const {
  return stop_->isEnabled();
}
bool RunsView::resumeEnabled() const {
  return resume_->isEnabled();
}
bool RunsView::bringBackEnabled() const {
  return bring_back_->isEnabled();
}

void RunsView::bringBackCurrent() {
  if (current_ < 0 || !runs_[current_]->process) return;
  Run& run = *runs_[current_];
  const EngineProcess::Options& o = run.process->options();
  if (o.host.isEmpty() || run.dir.isEmpty()) return;
  auto* process = new QProcess(this);
  process->setProcessChannelMode(QProcess::MergedChannels);
  const QString dir = run.dir;
  Run* raw = &run;
  bring_back_->setEnabled(false);
  connect(process, &QProcess::finished, this, [this, process, dir, raw](int code, QProcess::ExitStatus status) {
    const bool ok = status == QProcess::NormalExit && code == 0;
    for (const QString& line : QString::fromUtf8(process->readAll()).split('\n', Qt::SkipEmptyParts))
      raw->model.appendLog(line);
    process->deleteLater();
    scheduleRefresh();
    emit bringBackFinished(dir, ok);
  });
  connect(process, &QProcess::errorOccurred, this, [this, process, dir, raw](QProcess::ProcessError error) {
    if (error != QProcess::FailedToStart) return;
    raw->model.appendLog(tr("cannot start %1: %2").arg(process->program(), process->errorString()));
    process->deleteLater();
    scheduleRefresh();
    emit bringBackFinished(dir, false);
  });
  QStringList args{"--headless", "--host", o.host, "--bring-back", "--spec", o.spec_path, "--run-dir", dir};
  for (const QString& override_ : o.overrides) args << "--set" << override_;
  process->start(EngineProcess::launcherPath(), args);
}

QString RunsView::modelCheckpointOf(const QString& runDir) const {
  const RunModel* m = run(rowOf(runDir));
  if (!m) return {};
  const QString name = !m->bestCheckpoint().isEmpty() ? m->bestCheckpoint() : m->lastCheckpoint();
  return name.isEmpty() ? QString() : QDir(runDir).absoluteFilePath(name);
}

bool RunsView::pruneEnabled() const {
  return prune_->isEnabled();
}

bool RunsView::exportEnabled() const {
  return export_->isEnabled();
}

bool RunsView::exportPng(const QString& path, QString* error) {
  if (dirty_) refreshNow();
  // Render at the plots' on-screen size (at least a readable one when the view is hidden).
  QSize size = plot_area_->size();
  if (size.width() < 900 || size.height() < 600) {
    size = size.expandedTo(QSize(1200, 800));
    plot_area_->resize(size);
    if (auto* layout = plot_area_->layout()) layout->activate();
    for (RunPlot* p : plots_)
      p->replot();
  }
  const QPixmap pixmap = plot_area_->grab();
  if (pixmap.isNull() || !pixmap.save(path, "PNG")) {
    if (error) *error = tr("%1: cannot write the image").arg(path);
    return false;
  }
  return true;
}

bool RunsView::exportCsv(const QString& path, QString* error) {
  QVector<NamedRun> shown;
  for (int i = 0; i < runCount(); ++i)
    if (runs_[i]->item->isSelected()) shown.append({runs_[i]->name, &runs_[i]->model});
  if (shown.isEmpty() && current_ >= 0)
    shown.append({runs_[current_]->name, &runs_[current_]->model});
  return saveSeriesCsv(shown, path, error);
}

void RunsView::browseForRun() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a run directory"));
  if (!dir.isEmpty()) openRun(dir);
}

void RunsView::exportPngInteractive() {
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export the plots"), QStringLiteral("runs.png"), tr("PNG images (*.png)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportPng(path, &error)) status_->setText(error);
}

void RunsView::exportCsvInteractive() {
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export the series"), QStringLiteral("runs.csv"), tr("CSV files (*.csv)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportCsv(path, &error)) status_->setText(error);
}

}  // namespace mrcnn::ui

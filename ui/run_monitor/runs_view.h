// Runs: the run monitor. Starts tasks as mrcnn-engine child processes and reopens finished
// runs from their events.jsonl; lists them; plots every loss component, total loss, learning
// rate, images/s, data wait, memory and bbox/segm mAP against step for the runs selected
// (several selected = overlaid for comparison); shows the current run's log, progress and ETA,
// how it ended (a crash with its last error and exit status), and stops or resumes it.
//
// A fast engine never floods the UI: events only mark the view dirty and one single-shot
// timer (kRefreshIntervalMs) redraws, so the repaint rate never follows the event rate.
#pragma once

#include <QColor>
#include <QList>
#include <QString>
#include <QTimer>
#include <QWidget>
#include <memory>
#include <vector>

class QCheckBox;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSlider;
class QTreeWidget;
class QTreeWidgetItem;

namespace mrcnn::ui {

class EngineProcess;
class RunModel;
class RunPlot;

class RunsView : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kRefreshIntervalMs = 40;
  // A reopened run whose events end without a done event and whose events.jsonl changed this
  // recently is taken as running elsewhere (headless, another window) and followed: its new
  // lines are read every kFollowIntervalMs.
  static constexpr int kFollowRecentSeconds = 600;
  static constexpr int kFollowIntervalMs = 1000;

  explicit RunsView(QWidget* parent = nullptr);
  ~RunsView() override;

  // The runs in the list, in list order.
  int runCount() const;
  const RunModel* run(int row) const;
  QString runDir(int row) const;
  int rowOf(const QString& runDir) const;  // -1 when not listed
  EngineProcess* engine(int row) const;    // null for a run reopened and never restarted here
  // Engines still running (the main window asks before closing: closing stops them
  // gracefully, each writing a checkpoint).
  int runningEngines() const;
  // The run whose log, progress and buttons are shown (-1 when none).
  int currentRow() const;
  // Selects these rows (the plots overlay them); the first becomes current.
  void selectRows(const QList<int>& rows);

  QList<RunPlot*> plots() const { return plots_; }
  RunPlot* plot(const QString& seriesKey) const;  // the plot whose first key is this
  // Times the plots were redrawn because runs changed (a test watches the throttle).
  int replotCount() const { return replot_count_; }

  // The engine processes a training run started here uses (data-parallel ranks, see
  // EngineProcess::Options::nproc_per_node; ProcessCountBox sets it). Other tasks run one.
  void setTrainProcesses(int count);  // at least 1
  int trainProcesses() const { return train_processes_; }
  // Where a training run started here goes: a host of the hosts file, or "" for this machine
  // (HostBox sets it; EngineProcess::Options::host). A resumed run goes where it ran.
  void setTrainHost(const QString& host);
  QString trainHost() const { return train_host_; }

  void setSmoothing(double weight);  // 0..0.99
  double smoothing() const { return smoothing_; }
  void setLogScale(bool on);

  // The status line above the plots (how the current run ended, a crash with its last
  // error and exit status), the log pane's text, the progress bar's text.
  QString statusText() const;
  // Checkpoints, the last evaluation and the engine's warnings of the current run.
  QString detailsText() const;
  QString logText() const;
  QString progressText() const;
  bool stopEnabled() const;
  bool resumeEnabled() const;
  // The checkpoint what is made of a run's model (Prune…, Export…) starts from: its best, else
  // its last (absolute); empty when the run is not listed or has none.
  QString modelCheckpointOf(const QString& runDir) const;
  bool pruneEnabled() const;
  bool exportEnabled() const;
  bool bringBackEnabled() const;

  // The plots as one image, and the selected runs' series as CSV (see series_csv.h).
  bool exportPng(const QString& path, QString* error = nullptr);
  bool exportCsv(const QString& path, QString* error = nullptr);

 public slots:
  // Runs `mrcnn-engine --spec specPath --task task --run-dir runDir [--set o]...` and follows
  // it. A run directory that already has events (train resuming) shows its earlier curves too.
  // Resume passes the same overrides again (the spec as run already holds them). `train`
  // runs trainProcesses() processes. `taskArguments` are the task's own options (a prune's
  // --output-dir and rules).
  void startRun(const QString& specPath, const QString& task, const QString& runDir,
                const QStringList& overrides = {}, const QStringList& taskArguments = {});
  // Reopens a run from <runDir>/events.jsonl (a warning per bad line goes to its log).
  void openRun(const QString& runDir);
  void stopCurrent();  // graceful stop; a second call kills
  // A run sent to a host: its folder there as it is now into its run directory (the launcher
  // with --bring-back); bringBackFinished follows.
  void bringBackCurrent();
  // --task train again on the current run's directory, with the processes it ran with.
  void resumeCurrent();
  // Asks every running engine to stop gracefully; those still running after `timeoutMs` are
  // killed. allEnginesStopped() follows once none runs (at once when none was running).
  void stopAll(int timeoutMs);
  // Redraws now if anything changed (the timer calls it).
  void refreshNow();

 signals:
  void runStarted(const QString& runDir);
  // The Prune button: the current run (which has a checkpoint) is to be pruned.
  void pruneRequested(const QString& runDir);
  // The Export button: the current run's model is to be exported (ONNX, fp32 or int8).
  void exportRequested(const QString& runDir);
  void runFinished(const QString& runDir);
  void runOpened(const QString& runDir);
  void allEnginesStopped();
  void bringBackFinished(const QString& runDir, bool ok);
  void trainProcessesChanged(int count);
  void trainHostChanged(const QString& host);
  // A host refused the spec of a run sent there (exit code 3: its engine's validate; 4: data
  // the spec names is not there): the run's log, which holds the messages
  // ("file[:line:column]: error: field: message").
  void hostRefusedSpec(const QString& specPath, const QString& host, const QStringList& log);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  struct Run;

  enum Column { kName, kTask, kStatus, kStep, kColumns };  // of the run list

  void buildUi();  // runs_view_layout.cpp
  int addRun(std::unique_ptr<Run> run);
  EngineProcess* ensureProcess(Run& run);
  void scheduleRefresh();
  void followRuns();  // reads what the followed runs' engines appended
  void onSelectionChanged();
  void rebuildPlots();
  void updateRunItem(Run& run);
  void updateCurrentPanel(bool full_log);
  void applyPalette();
  QColor runColour(int index) const;
  void browseForRun();
  void exportPngInteractive();
  void exportCsvInteractive();

  std::vector<std::unique_ptr<Run>> runs_;
  int current_ = -1;
  int shown_log_lines_ = 0;
  int shown_log_run_ = -1;
  int run_serial_ = 0;

  QTreeWidget* list_ = nullptr;
  QLabel* legend_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* details_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* stop_ = nullptr;
  QPushButton* resume_ = nullptr;
  QPushButton* prune_ = nullptr;
  QPushButton* export_ = nullptr;
  QPushButton* bring_back_ = nullptr;
  QSlider* smoothing_slider_ = nullptr;
  QLabel* smoothing_label_ = nullptr;
  QCheckBox* log_scale_ = nullptr;
  QWidget* plot_area_ = nullptr;
  QPlainTextEdit* log_ = nullptr;
  QList<RunPlot*> plots_;

  QTimer refresh_timer_;
  QTimer stop_all_deadline_;
  QTimer follow_timer_;
  bool stopping_all_ = false;
  bool dirty_ = false;
  bool selection_dirty_ = false;
  int replot_count_ = 0;
  double smoothing_ = 0.6;
  int train_processes_ = 1;
  QString train_host_;
};

}  // namespace mrcnn::ui

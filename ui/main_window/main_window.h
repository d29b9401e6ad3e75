// The workbench window: a thin assembly of the views (Experiments, Runs, Dataset,
// Predictions, Warnings, Analysis) as tabs, the start page shown instead of them until something
// is opened, the docks (problems of the spec, recent items), the menus and shortcuts, and the window's state kept across sessions in QSettings. Each view is a
// class of its own; this file only wires them together.
#pragma once

#include <QList>
#include <QMainWindow>
#include <functional>

class QAction;
class QDockWidget;
class QMenu;
class QTabWidget;

namespace mrcnn::ui {

class AnalysisView;
class HostBox;
class LabelReview;
class DatasetBrowser;
class NewExperimentWizard;
class PredictionView;
class ProblemsView;
class PruneFlow;
class ExportFlow;
class RecentItems;
class RecentPanel;
class RunsView;
class SpecEditor;
class StartPage;
class WarningReview;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  enum class View { Experiments, Runs, Dataset, Predictions, Warnings, Analysis, LabelReview };
  static constexpr int kViewCount = 7;

  // Closing the window while engines run: the GUI owns them as child processes, so it either
  // stops them (each finishes its step and writes a checkpoint; killed after the stop
  // timeout) and quits, or stays open.
  enum class RunningEnginesAnswer { StopAndQuit, Cancel };
  // Asked with the number of running engines; the default shows a message box. Tests
  // answer without a modal dialog.
  using RunningEnginesQuestion = std::function<RunningEnginesAnswer(QWidget* parent, int running)>;
  static constexpr int kDefaultStopTimeoutMs = 30000;

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens a spec in the Experiments view (asking about unsaved changes first when
  // `interactive`); a failure is shown in a message box when interactive, else returned.
  bool openSpec(const QString& path, bool interactive = true, QString* error = nullptr);

  // The start page in place of the views (the app opened without a spec); any view shown
  // (showView, a spec opened) replaces it. The docks are hidden meanwhile: there is no spec to
  // have problems, and the page lists the recent items itself.
  void showStartPage();
  bool isStartPageShown() const;
  StartPage* startPage() const { return start_page_; }
  // File › New Experiment from Data…: opens the wizard (non-modal); the spec it writes opens
  // in the Experiments view.
  NewExperimentWizard* newExperiment();
  // Start page › Open the Embedded Example: the example spec, written first when missing.
  bool openExample(QString* error = nullptr);

  SpecEditor* specEditor() const { return spec_editor_; }
  RecentItems* recentItems() const { return recent_; }
  // The widget of a view.
  QWidget* view(View which) const { return views_[static_cast<int>(which)]; }
  void showView(View which);
  View currentView() const;
  QDockWidget* problemsDock() const { return problems_dock_; }
  QDockWidget* recentDock() const { return recent_dock_; }

  RunsView* runsView() const { return runs_; }
  PredictionView* predictionView() const { return predictions_; }
  AnalysisView* analysisView() const { return analysis_; }
  PruneFlow* pruneFlow() const { return prune_flow_; }
  ExportFlow* exportFlow() const { return export_flow_; }
  void setRunningEnginesQuestion(RunningEnginesQuestion question);
  void setStopTimeout(int ms) { stop_timeout_ms_ = ms; }
  // True between "Stop runs and quit" and the last engine ending.
  bool isStoppingToQuit() const { return quitting_; }

  // Saves the geometry, the dock layout, the current view and the editor's split.
  void saveWindowState() const;

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void addView(View which, QWidget* widget, const QString& title);
  // The Runs, Dataset, Predictions, Warnings and Analysis views, and their wiring to the spec
  // editor and the recent lists.
  void addOtherViews();
  void createDocks();
  void createActions();
  void restoreWindowState();
  void updateTitle();
  void fillRecentMenu();
  void openRecent(int kind, const QString& path);
  void showAbout();
  // Run › Hosts… and the Run-on box's last entry: the hosts file in its dialog.
  void editHosts();
  void leaveStartPage();
  // Makes `widget` the central widget; the one it replaces stays a hidden child (the window
  // keeps owning it, and its children are still found).
  void swapCentralWidget(QWidget* widget);
  void startAction(int action);  // a StartPage::Action

  SpecEditor* spec_editor_;
  RunsView* runs_ = nullptr;
  HostBox* host_box_ = nullptr;
  DatasetBrowser* datasets_ = nullptr;
  PredictionView* predictions_ = nullptr;
  WarningReview* warnings_ = nullptr;
  AnalysisView* analysis_ = nullptr;
  LabelReview* label_review_ = nullptr;
  PruneFlow* prune_flow_ = nullptr;
  ExportFlow* export_flow_ = nullptr;
  RecentItems* recent_;
  QTabWidget* tabs_;
  StartPage* start_page_;  // the central widget in place of tabs_ while shown
  QList<QDockWidget*> docks_hidden_for_start_;  // shown again when the start page goes
  QWidget* views_[kViewCount] = {};
  ProblemsView* problems_ = nullptr;
  RecentPanel* recent_panel_ = nullptr;
  QDockWidget* problems_dock_ = nullptr;
  QDockWidget* recent_dock_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QMenu* view_menu_ = nullptr;
  QAction* view_actions_[kViewCount] = {};
  RunningEnginesQuestion running_question_;
  int stop_timeout_ms_ = kDefaultStopTimeoutMs;
  bool quitting_ = false;
};

}  // namespace mrcnn::ui

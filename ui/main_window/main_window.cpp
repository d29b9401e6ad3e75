#include "ui/main_window/main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>
#include <QVBoxLayout>
#include <utility>

#include "ui/analysis/analysis_view.h"
#include "ui/dataset_browser/dataset_browser.h"
#include "ui/dataset_browser/image_list_model.h"
#include "ui/export/export_flow.h"
#include "ui/main_window/example_spec.h"
#include "ui/main_window/recent_items.h"
#include "ui/main_window/recent_panel.h"
#include "ui/main_window/start_page.h"
#include "ui/main_window/versions.h"
#include "ui/new_experiment/new_experiment_wizard.h"
#include "ui/predictions/prediction_view.h"
#include "ui/prune/prune_flow.h"
#include "ui/hosts/hosts_dialog.h"
#include "ui/run_monitor/host_box.h"
#include "ui/run_monitor/process_count_box.h"
#include "ui/run_monitor/run_model.h"
#include "ui/run_monitor/runs_view.h"
#include "ui/spec_editor/problems_view.h"
#include "ui/spec_editor/spec_editor.h"
#include "ui/spec_editor/themed_icon.h"
#include "ui/label_review/label_review.h"
#include "ui/warnings/warning_review.h"

namespace mrcnn::ui {
namespace {

const char* const kViewNames[MainWindow::kViewCount] = {
    QT_TRANSLATE_NOOP("MainWindow", "Experiments"), QT_TRANSLATE_NOOP("MainWindow", "Runs"),
    QT_TRANSLATE_NOOP("MainWindow", "Dataset"),     QT_TRANSLATE_NOOP("MainWindow", "Predictions"),
    QT_TRANSLATE_NOOP("MainWindow", "Warnings"),    QT_TRANSLATE_NOOP("MainWindow", "Analysis"),
    QT_TRANSLATE_NOOP("MainWindow", "Label Review")};

MainWindow::RunningEnginesAnswer askAboutRunningEngines(QWidget* parent, int running,
                                                        int timeout_ms) {
  QMessageBox box(parent);
  box.setIcon(QMessageBox::Question);
  box.setWindowTitle(MainWindow::tr("Runs are still going"));
  box.setText(MainWindow::tr("%n engine(s) still running.", nullptr, running));
  box.setInformativeText(
      MainWindow::tr("The workbench runs them as its own child processes, so quitting stops "
                     "them: each finishes its step and writes a checkpoint (an engine still "
                     "running after %1 s is killed). Resume continues a run later.")
          .arg(timeout_ms / 1000));
  QPushButton* stop = box.addButton(MainWindow::tr("Stop Runs and Quit"), QMessageBox::AcceptRole);
  box.addButton(QMessageBox::Cancel);
  box.setDefaultButton(QMessageBox::Cancel);
  box.exec();
  return box.clickedButton() == stop ? MainWindow::RunningEnginesAnswer::StopAndQuit
                                     : MainWindow::RunningEnginesAnswer::Cancel;
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      spec_editor_(new SpecEditor(this)),
      recent_(new RecentItems(this)),
      tabs_(new QTabWidget(this)),
      start_page_(new StartPage(recent_, this)) {
  setObjectName(u"mainWindow"_qs);
  tabs_->setDocumentMode(true);
  setCentralWidget(tabs_);
  start_page_->hide();
  connect(start_page_, &StartPage::actionRequested, this,
          [this](StartPage::Action action) { startAction(static_cast<int>(action)); });
  connect(start_page_, &StartPage::recentRequested, this,
          [this](RecentItems::Kind kind, const QString& path) {
            openRecent(static_cast<int>(kind), path);
          });
  addView(View::Experiments, spec_editor_, tr(kViewNames[0]));
  addOtherViews();

  createDocks();
  createActions();

  connect(spec_editor_, &SpecEditor::modificationChanged, this, &MainWindow::updateTitle);
  connect(spec_editor_, &SpecEditor::filePathChanged, this, &MainWindow::updateTitle);
  connect(spec_editor_, &SpecEditor::specUsed, this,
          [this](const QString& path) { recent_->add(RecentItems::Kind::Spec, path); });
  connect(spec_editor_, &SpecEditor::statusMessage, this,
          [this](const QString& message) { statusBar()->showMessage(message, 8000); });
  connect(recent_, &RecentItems::changed, this, &MainWindow::fillRecentMenu);
  connect(tabs_, &QTabWidget::currentChanged, this, [this] {
    const int index = static_cast<int>(currentView());
    if (view_actions_[index]) view_actions_[index]->setChecked(true);
  });
  statusBar()->showMessage(tr("Ready"));
  updateTitle();
  restoreWindowState();
}

MainWindow::~MainWindow() = default;

void MainWindow::addView(View which, QWidget* widget, const QString& title) {
  views_[static_cast<int>(which)] = widget;
  tabs_->addTab(widget, title);
}

void MainWindow::addOtherViews() {
  runs_ = new RunsView(this);
  addView(View::Runs, runs_, tr(kViewNames[1]));
  datasets_ = new DatasetBrowser(this);
  addView(View::Dataset, datasets_, tr(kViewNames[2]));
  predictions_ = new PredictionView(this);
  addView(View::Predictions, predictions_, tr(kViewNames[3]));
  warnings_ = new WarningReview(this);
  addView(View::Warnings, warnings_, tr(kViewNames[4]));
  analysis_ = new AnalysisView(this);
  addView(View::Analysis, analysis_, tr(kViewNames[5]));
  label_review_ = new LabelReview(this);
  addView(View::LabelReview, label_review_, tr(kViewNames[6]));
  // Model-assisted labelling: a prediction run's draft opened in the dataset browser to edit.
  connect(predictions_, &PredictionView::editDraft, this,
          [this](const QString& draft, const QString& image_dir) {
            datasets_->openDataset(draft, image_dir);
            showView(View::Dataset);
            statusBar()->showMessage(
                tr("The draft %1: pick an image and Edit to correct it").arg(draft), 8000);
          });
  connect(label_review_, &LabelReview::useInSpec, this,
          [this](const QString& original, const QString& reviewed) {
            const QStringList fields = spec_editor_->replaceAnnotationFile(original, reviewed);
            if (fields.isEmpty()) {
              statusBar()->showMessage(
                  tr("The spec does not name %1: set its annotation file to %2 by hand")
                      .arg(original, reviewed));
              return;
            }
            showView(View::Experiments);
            statusBar()->showMessage(tr("%1 now names %2").arg(fields.join(", "), reviewed), 8000);
          });

  // Run: the engine starts in the Runs view, in the run directory the spec names.
  connect(spec_editor_, &SpecEditor::runRequested, this,
          [this](const QString& spec, const QString& task) {
            const spec::Resolved& r = spec_editor_->loaded().resolved;
            const QString run_dir = QString::fromStdString((r.output_dir / r.run_name).string());
            showView(View::Runs);
            runs_->startRun(spec, task, run_dir);
          });
  connect(spec_editor_, &SpecEditor::specUsed, predictions_, &PredictionView::setSpec);
  const auto remember_run = [this](const QString& dir) {
    if (!dir.isEmpty()) recent_->add(RecentItems::Kind::Run, dir);
  };
  connect(runs_, &RunsView::runStarted, this, remember_run);
  // "Stop runs and quit": close again once the last engine has ended.
  connect(runs_, &RunsView::allEnginesStopped, this, [this] {
    if (quitting_) QMetaObject::invokeMethod(this, &QWidget::close, Qt::QueuedConnection);
  });
  connect(runs_, &RunsView::runOpened, this, remember_run);
  // A run that has a checkpoint is what the Predictions view runs, unless one was chosen there.
  const auto offer_checkpoint = [this](const QString& dir) {
    const RunModel* run = runs_->run(runs_->rowOf(dir));
    if (!run || !predictions_->checkpoint().isEmpty()) return;
    const QString checkpoint =
        !run->bestCheckpoint().isEmpty() ? run->bestCheckpoint() : run->lastCheckpoint();
    if (checkpoint.isEmpty()) return;
    predictions_->setCheckpoint(QDir(dir).absoluteFilePath(checkpoint));
    if (const QString as_run = QDir(dir).filePath(u"spec.txt"_qs); QFileInfo::exists(as_run))
      predictions_->setSpec(as_run);
  };
  connect(runs_, &RunsView::runFinished, this, offer_checkpoint);
  // A host's engine refused the spec: its messages join the Problems list.
  connect(runs_, &RunsView::hostRefusedSpec, this,
          [this](const QString& spec, const QString& host, const QStringList& log) {
            if (QFileInfo(spec) == QFileInfo(spec_editor_->filePath()))
              spec_editor_->addHostProblems(host, log);
          });
  connect(runs_, &RunsView::runOpened, this, offer_checkpoint);
  // A run's latest evaluation is what Analysis shows, unless a metrics file was opened there.
  const auto offer_evaluation = [this](const QString& dir) {
    if (!analysis_->data()) analysis_->openRun(dir);
  };
  connect(runs_, &RunsView::runFinished, this, offer_evaluation);
  // A label check that ran from here: its findings open in the Label Review.
  connect(runs_, &RunsView::runFinished, this, [this](const QString& dir) {
    const RunModel* run = runs_->run(runs_->rowOf(dir));
    if (!run || run->task() != QLatin1String("label_check") || run->status() != RunStatus::Ok)
      return;
    const QString mistakes = QDir(dir).filePath(u"label_check/mistakes.json"_qs);
    if (QFileInfo::exists(mistakes) && label_review_->openMistakes(mistakes))
      showView(View::LabelReview);
  });
  connect(runs_, &RunsView::runOpened, this, offer_evaluation);
  // Prune… on a run: the dialog, the engine's prune in the run, the result; Retrain… opens
  // the spec that retrains the pruned model.
  prune_flow_ = new PruneFlow(runs_, this);
  connect(prune_flow_, &PruneFlow::retrainSpecReady, this,
          [this](const QString& spec) { openSpec(spec); });
  connect(prune_flow_, &PruneFlow::pruneFailed, this, [this](const QString&, const QString& why) {
    statusBar()->showMessage(tr("Prune failed: %1").arg(why), 10000);
  });
  // Export… on a run: the dialog, the engine's export in the run, the report; Run in
  // Predictions runs the exported model (int8 where there is one) with OpenVINO there.
  export_flow_ = new ExportFlow(runs_, this);
  connect(export_flow_, &ExportFlow::predictionsRequested, this,
          [this](const QString& spec, const QString& model) {
            if (!spec.isEmpty()) predictions_->setSpec(spec);
            predictions_->setBackend(QStringLiteral("openvino"));
            predictions_->setExportedModel(model);
            showView(View::Predictions);
          });
  connect(export_flow_, &ExportFlow::exportFailed, this, [this](const QString&, const QString& why) {
    statusBar()->showMessage(tr("Export failed: %1").arg(why), 10000);
  });
  // The images behind a confusion cell or an error list open in Predictions.
  connect(analysis_, &AnalysisView::imagesRequested, this,
          [this](const QList<qint64>& ids, const QString& caption, const QString& results,
                 const QString& image_dir, const QString& annotations) {
            predictions_->showImages(ids, caption, results, image_dir, annotations);
            showView(View::Predictions);
          });
  connect(datasets_, &DatasetBrowser::datasetLoaded, this, [this](bool ok) {
    if (!ok || !datasets_->dataset()) return;
    recent_->add(RecentItems::Kind::Dataset, datasets_->dataset()->annotations,
                 datasets_->dataset()->image_dir);
  });
}

void MainWindow::createDocks() {
  problems_ = new ProblemsView(this);
  problems_->attach(spec_editor_);
  problems_dock_ = new QDockWidget(tr("Problems"), this);
  problems_dock_->setObjectName(u"problemsDock"_qs);
  problems_dock_->setWidget(problems_);
  addDockWidget(Qt::BottomDockWidgetArea, problems_dock_);

  recent_panel_ = new RecentPanel(recent_, this);
  recent_dock_ = new QDockWidget(tr("Recent"), this);
  recent_dock_->setObjectName(u"recentDock"_qs);
  recent_dock_->setWidget(recent_panel_);
  addDockWidget(Qt::LeftDockWidgetArea, recent_dock_);
  connect(recent_panel_, &RecentPanel::openRequested, this,
          [this](RecentItems::Kind kind, const QString& path) {
            openRecent(static_cast<int>(kind), path);
          });
}

void MainWindow::createActions() {
  const auto icon = [](const char* theme, const QString& fallback) {
    return themedIcon(QString::fromLatin1(theme), fallback);
  };
  QToolBar* bar = addToolBar(tr("Main"));
  bar->setObjectName(u"mainToolBar"_qs);

  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* new_spec = file->addAction(icon("document-new", {}), tr("&New Spec"), this, [this] {
    if (spec_editor_->maybeSave()) spec_editor_->newSpec();
    showView(View::Experiments);
  });
  new_spec->setShortcut(QKeySequence::New);
  QAction* open = file->addAction(icon("document-open", u":/icons/open.svg"_qs), tr("&Open Spec…"),
                                  this, [this] {
                                    if (spec_editor_->open()) showView(View::Experiments);
                                  });
  open->setShortcut(QKeySequence::Open);
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  fillRecentMenu();
  file->addAction(icon("document-new", {}), tr("New E&xperiment from Data…"), this,
                  [this] { newExperiment(); })
      ->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_N));
  file->addAction(icon("folder-open", {}), tr("Open &Dataset…"), this, [this] {
    showView(View::Dataset);
    datasets_->chooseDataset();
  });
  file->addSeparator();
  QAction* save = file->addAction(icon("document-save", u":/icons/save.svg"_qs), tr("&Save"),
                                  spec_editor_, &SpecEditor::save);
  save->setShortcut(QKeySequence::Save);
  QAction* save_as = file->addAction(icon("document-save-as", {}), tr("Save &As…"), spec_editor_,
                                     &SpecEditor::saveAsDialog);
  save_as->setShortcut(QKeySequence::SaveAs);
  file->addSeparator();
  QAction* quit = file->addAction(icon("application-exit", {}), tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);
  quit->setMenuRole(QAction::QuitRole);

  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  QAction* undo = edit->addAction(icon("edit-undo", u":/icons/undo.svg"_qs), tr("&Undo"),
                                  spec_editor_, &SpecEditor::undo);
  undo->setShortcut(QKeySequence::Undo);
  undo->setEnabled(spec_editor_->canUndo());
  connect(spec_editor_, &SpecEditor::undoAvailable, undo, &QAction::setEnabled);
  QAction* redo = edit->addAction(icon("edit-redo", u":/icons/redo.svg"_qs), tr("&Redo"),
                                  spec_editor_, &SpecEditor::redo);
  redo->setShortcut(QKeySequence::Redo);
  redo->setEnabled(spec_editor_->canRedo());
  connect(spec_editor_, &SpecEditor::redoAvailable, redo, &QAction::setEnabled);

  QMenu* run_menu = menuBar()->addMenu(tr("&Run"));
  QAction* run = run_menu->addAction(icon("media-playback-start", u":/icons/run.svg"_qs),
                                     tr("&Run the Spec"), spec_editor_, &SpecEditor::requestRun);
  run->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  run->setToolTip(tr("Save the spec and start its task (Ctrl+R)"));
  run_menu->addAction(tr("&Hosts…"), this, &MainWindow::editHosts);

  view_menu_ = menuBar()->addMenu(tr("&View"));
  auto* views = new QActionGroup(this);
  for (int i = 0; i < kViewCount; ++i) {
    if (!views_[i]) continue;
    QAction* a = view_menu_->addAction(tr(kViewNames[i]), this,
                                       [this, i] { showView(static_cast<View>(i)); });
    a->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
    a->setCheckable(true);
    a->setChecked(tabs_->currentWidget() == views_[i]);
    views->addAction(a);
    view_actions_[i] = a;
  }
  view_menu_->addSeparator();
  view_menu_->addAction(icon("go-home", {}), tr("&Start Page"), this, &MainWindow::showStartPage);
  view_menu_->addAction(problems_dock_->toggleViewAction());
  view_menu_->addAction(recent_dock_->toggleViewAction());
  view_menu_->addAction(bar->toggleViewAction());

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About Mask R-CNN Workbench"), this, &MainWindow::showAbout)
      ->setMenuRole(QAction::AboutRole);
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);

  bar->addAction(open);
  bar->addAction(save);
  bar->addSeparator();
  bar->addAction(undo);
  bar->addAction(redo);
  bar->addSeparator();
  bar->addAction(run);
  bar->addWidget(new ProcessCountBox(runs_, bar));
  host_box_ = new HostBox(runs_, bar);
  bar->addWidget(host_box_);
  connect(host_box_, &HostBox::editRequested, this, &MainWindow::editHosts);
}

void MainWindow::editHosts() {
  HostsDialog dialog(remote::defaultHostsPath(), this);
  dialog.exec();
  host_box_->reload();
}

void MainWindow::showView(View which) {
  leaveStartPage();
  if (QWidget* w = view(which)) tabs_->setCurrentWidget(w);
}

void MainWindow::showStartPage() {
  if (isStartPageShown()) return;
  swapCentralWidget(start_page_);
  // isHidden, not isVisible: before the window is first shown no dock is visible yet.
  for (QDockWidget* dock : {problems_dock_, recent_dock_}) {
    if (dock->isHidden()) continue;
    dock->hide();
    docks_hidden_for_start_ << dock;
  }
  updateTitle();
}

bool MainWindow::isStartPageShown() const {
  return centralWidget() == start_page_;
}

void MainWindow::swapCentralWidget(QWidget* widget) {
  // setCentralWidget deletes the widget it replaces: that one is taken out first.
  QWidget* old = takeCentralWidget();
  if (old) {
    old->setParent(this);
    old->hide();
  }
  setCentralWidget(widget);
  widget->show();
}

void MainWindow::leaveStartPage() {
  if (!isStartPageShown()) return;
  swapCentralWidget(tabs_);
  for (QDockWidget* dock : std::as_const(docks_hidden_for_start_))
    dock->show();
  docks_hidden_for_start_.clear();
  updateTitle();
}

void MainWindow::startAction(int action) {
  switch (static_cast<StartPage::Action>(action)) {
    case StartPage::Action::NewExperiment:
      newExperiment();
      break;
    case StartPage::Action::OpenExample:
      if (QString why; !openExample(&why)) QMessageBox::warning(this, tr("The example"), why);
      break;
    case StartPage::Action::OpenSpec:
      if (spec_editor_->open()) showView(View::Experiments);
      break;
    case StartPage::Action::OpenRun:
      if (const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a run directory"));
          !dir.isEmpty()) {
        showView(View::Runs);
        runs_->openRun(dir);
      }
      break;
  }
}

NewExperimentWizard* MainWindow::newExperiment() {
  auto* wizard = new NewExperimentWizard(this);
  wizard->setAttribute(Qt::WA_DeleteOnClose);
  connect(wizard, &NewExperimentWizard::specWritten, this,
          [this](const QString& path) { openSpec(path); });
  wizard->show();
  return wizard;
}

bool MainWindow::openExample(QString* error) {
  const QString path = ExampleSpec::ensureWritten(error);
  return !path.isEmpty() && openSpec(path, false, error);
}

MainWindow::View MainWindow::currentView() const {
  for (int i = 0; i < kViewCount; ++i) {
    if (views_[i] && views_[i] == tabs_->currentWidget()) return static_cast<View>(i);
  }
  return View::Experiments;
}

bool MainWindow::openSpec(const QString& path, bool interactive, QString* error) {
  if (interactive && !spec_editor_->maybeSave()) return false;
  QString why;
  if (!spec_editor_->openFile(path, &why)) {
    if (interactive) QMessageBox::warning(this, tr("Open a spec"), why);
    if (error) *error = why;
    return false;
  }
  showView(View::Experiments);
  return true;
}

void MainWindow::openRecent(int kind, const QString& path) {
  if (!QFileInfo::exists(path)) {
    statusBar()->showMessage(tr("%1 is gone; removed from the recent list").arg(path), 8000);
    recent_->remove(static_cast<RecentItems::Kind>(kind), path);
    return;
  }
  switch (static_cast<RecentItems::Kind>(kind)) {
    case RecentItems::Kind::Spec:
      openSpec(path);
      break;
    case RecentItems::Kind::Dataset:
      showView(View::Dataset);
      datasets_->openDataset(path, recent_->companion(RecentItems::Kind::Dataset, path));
      break;
    case RecentItems::Kind::Run:
      showView(View::Runs);
      runs_->openRun(path);
      break;
  }
}

void MainWindow::fillRecentMenu() {
  if (!recent_menu_) return;
  recent_menu_->clear();
  const QStringList specs = recent_->items(RecentItems::Kind::Spec);
  for (int i = 0; i < specs.size(); ++i) {
    const QString path = specs[i];
    recent_menu_
        ->addAction(u"&%1  %2"_qs.arg(i + 1 < 10 ? QString::number(i + 1) : u"0"_qs,
                                      QFileInfo(path).fileName()),
                    this,
                    [this, path] { openRecent(static_cast<int>(RecentItems::Kind::Spec), path); })
        ->setToolTip(path);
  }
  if (specs.isEmpty()) recent_menu_->addAction(tr("(none)"))->setEnabled(false);
  recent_menu_->addSeparator();
  recent_menu_->addAction(tr("Clear the List"), this,
                          [this] { recent_->clear(RecentItems::Kind::Spec); });
}

void MainWindow::updateTitle() {
  if (isStartPageShown()) {
    setWindowTitle(tr("Mask R-CNN Workbench"));
    setWindowModified(false);
    setWindowFilePath({});
    return;
  }
  setWindowTitle(tr("%1[*] — Mask R-CNN Workbench").arg(spec_editor_->displayName()));
  setWindowModified(spec_editor_->isModified());
  setWindowFilePath(spec_editor_->filePath());
}

void MainWindow::showAbout() {
  auto* dialog = new QDialog(this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setWindowTitle(tr("About Mask R-CNN Workbench"));
  auto* column = new QVBoxLayout(dialog);
  auto* text = new QLabel(dialog);
  text->setTextInteractionFlags(Qt::TextSelectableByMouse);
  text->setWordWrap(true);
  column->addWidget(text);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
  connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
  column->addWidget(buttons);

  const QString head =
      tr("<h3>Mask R-CNN Workbench</h3><p>Experiment specs compatible with TAO Toolkit's "
         "MaskRCNN, training and evaluation on LibTorch, datasets and predictions.</p>");
  const QString local = localVersions().join(u"<br>"_qs);
  const auto show = [text, head, local](const QString& engine) {
    text->setText(head + u"<p>"_qs + local + u"</p><p><b>"_qs + QObject::tr("Engine") +
                  u"</b><br>"_qs + engine + u"</p>"_qs);
  };
  show(tr("asking mrcnn-engine…"));
  auto* query = new EngineVersionQuery(dialog);
  connect(query, &EngineVersionQuery::done, dialog,
          [show](const QStringList& lines, bool) { show(lines.join(u"<br>"_qs).toHtmlEscaped()); });
  query->start();
  dialog->show();
}

void MainWindow::saveWindowState() const {
  QSettings settings;
  settings.setValue(u"mainWindow/geometry"_qs, saveGeometry());
  // The dock layout as the user left it: the docks hidden for the start page count as shown.
  for (QDockWidget* dock : docks_hidden_for_start_)
    dock->show();
  settings.setValue(u"mainWindow/state"_qs, saveState());
  for (QDockWidget* dock : docks_hidden_for_start_)
    dock->hide();
  settings.setValue(u"mainWindow/view"_qs, static_cast<int>(currentView()));
  settings.setValue(u"specEditor/splitter"_qs, spec_editor_->splitter()->saveState());
}

void MainWindow::restoreWindowState() {
  QSettings settings;
  if (!restoreGeometry(settings.value(u"mainWindow/geometry"_qs).toByteArray())) {
    resize(1280, 800);
  }
  if (!restoreState(settings.value(u"mainWindow/state"_qs).toByteArray())) {
    // First start: the docks as side panels, the views keep most of the window.
    resizeDocks({recent_dock_}, {200}, Qt::Horizontal);
    resizeDocks({problems_dock_}, {130}, Qt::Vertical);
  }
  if (!spec_editor_->splitter()->restoreState(
          settings.value(u"specEditor/splitter"_qs).toByteArray())) {
    spec_editor_->splitter()->setSizes({540, 460});
  }
  const int view = settings.value(u"mainWindow/view"_qs, 0).toInt();
  if (view >= 0 && view < kViewCount) showView(static_cast<View>(view));
}

void MainWindow::setRunningEnginesQuestion(RunningEnginesQuestion question) {
  running_question_ = std::move(question);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (quitting_) {
    // Asked already; waiting for the engines to end (their done events still arrive here).
    if (runs_->runningEngines() > 0) {
      event->ignore();
      return;
    }
    quitting_ = false;
    saveWindowState();
    event->accept();
    return;
  }
  if (!spec_editor_->maybeSave()) {
    event->ignore();
    return;
  }
  if (const int running = runs_->runningEngines(); running > 0) {
    const RunningEnginesAnswer answer =
        running_question_ ? running_question_(this, running)
                          : askAboutRunningEngines(this, running, stop_timeout_ms_);
    event->ignore();
    if (answer == RunningEnginesAnswer::Cancel) return;
    quitting_ = true;
    statusBar()->showMessage(
        tr("Stopping %n run(s) before quitting: each writes a checkpoint…", nullptr, running));
    showView(View::Runs);
    runs_->stopAll(stop_timeout_ms_);
    return;
  }
  saveWindowState();
  event->accept();
}

}  // namespace mrcnn::ui

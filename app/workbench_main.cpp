// mrcnn-workbench: the desktop workbench, or with --headless the same engine from a terminal.
//
//   mrcnn-workbench [--help | --version]
//   mrcnn-workbench [SPEC] [--view N] [--run DIR]... [--dataset JSON --images DIR [--image-id N]
//                   [--dataset-statistics]]
//                   [--results JSON --results-images DIR [--ground-truth JSON]]
//                   [--checkpoint FILE] [--score-threshold T] [--result-image N]
//                   [--warnings REPORT
//                   --warnings-annotations JSON
//                   --warnings-images DIR [--warning-entry N]]
//                   [--analysis METRICS [--analysis-class ID] [--analysis-cell ROW,COLUMN]]
//                   [--prune-result DIR] [--export-result DIR]
//                   [--new-experiment DATA [--experiment-folder DIR] [--new-experiment-page N]]
//                   [--screenshot PNG [--screenshot-delay MS]]
//   mrcnn-workbench --headless SPEC [--task TASK] ...      (see app/headless.h)
//
// --view N shows view N (1 Experiments ... 5 Warnings, 6 Analysis) first; the other options open
// what each view shows (the same as its Open buttons); --screenshot grabs the window once it is
// laid out and its files are read, saves it as PNG and exits (how the screenshots in docs/ are
// taken, under Xvfb); with --prune-result (a prune's output folder: its result dialog, as after
// Runs › Prune…) or --export-result (an export's folder: its report, as after Runs › Export…)
// it grabs that dialog, with --new-experiment (File › New Experiment from
// Data… on DATA, stepped on to page N once each page is complete) the wizard. Opened with
// none of these, the window shows its start page.
#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QIcon>
#include <QMessageBox>
#include <QTimer>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "app/headless.h"
#include "engine/exit_codes.h"
#include "ui/analysis/analysis_view.h"
#include "ui/dataset_browser/dataset_browser.h"
#include "ui/export/export_flow.h"
#include "ui/export/export_result.h"
#include "ui/main_window/main_window.h"
#include "ui/new_experiment/data_page.h"
#include "ui/new_experiment/new_experiment_wizard.h"
#include "ui/predictions/prediction_view.h"
#include "ui/prune/prune_flow.h"
#include "ui/prune/prune_result.h"
#include "ui/run_monitor/runs_view.h"
#include "ui/warnings/warning_review.h"

namespace {

using mrcnn::ui::MainWindow;

// What the view options ask for, opened in the window's views.
struct Opened {
  QStringList runs;
  QString dataset, images;
  qint64 image_id = -1;
  bool dataset_statistics = false;
  QString results, results_images, ground_truth, checkpoint;
  double score_threshold = -1;
  int result_image = 0;
  QString warnings, warnings_annotations, warnings_images;
  int warning_entry = 0;
  QString analysis;
  qint64 analysis_class = -1;
  int analysis_row = -1, analysis_column = -1;
  QString prune_result;
  QString export_result;
  QString new_experiment, experiment_folder;
  int new_experiment_page = 1;  // 1 the data ... 4 the start
};

// Whether the options open nothing: the window then shows its start page.
bool opensNothing(const Opened& o) {
  return o.runs.isEmpty() && o.dataset.isEmpty() && o.results.isEmpty() && o.checkpoint.isEmpty() &&
         o.ground_truth.isEmpty() && o.warnings.isEmpty() && o.analysis.isEmpty() &&
         o.prune_result.isEmpty() && o.export_result.isEmpty() && o.new_experiment.isEmpty();
}

// An error message for options given without their companions ("" when fine).
QString missingCompanions(const Opened& o) {
  if (!o.dataset.isEmpty() != !o.images.isEmpty()) return u"--dataset and --images go together"_qs;
  if (!o.results.isEmpty() && o.results_images.isEmpty())
    return u"--results needs --results-images (the folder its file names are relative to)"_qs;
  if (!o.warnings.isEmpty() && (o.warnings_annotations.isEmpty() || o.warnings_images.isEmpty()))
    return u"--warnings needs --warnings-annotations and --warnings-images"_qs;
  if (o.analysis.isEmpty() && (o.analysis_class >= 0 || o.analysis_row >= 0))
    return u"--analysis-class and --analysis-cell need --analysis METRICS"_qs;
  if (o.new_experiment.isEmpty() && (!o.experiment_folder.isEmpty() || o.new_experiment_page > 1))
    return u"--experiment-folder and --new-experiment-page need --new-experiment DATA"_qs;
  return {};
}

// Opens what the options name in the window's views (checked by missingCompanions first);
// returns what could not be opened, each naming its option and file.
QStringList openAll(MainWindow& window, const Opened& o) {
  QStringList errors;
  if (!o.runs.isEmpty()) {
    auto* runs = qobject_cast<mrcnn::ui::RunsView*>(window.view(MainWindow::View::Runs));
    for (const QString& dir : o.runs)
      runs->openRun(dir);
    // Several runs: overlaid for comparison.
    QList<int> rows;
    for (int i = 0; i < runs->runCount(); ++i)
      rows << i;
    runs->selectRows(rows);
  }
  if (!o.dataset.isEmpty()) {
    auto* browser =
        qobject_cast<mrcnn::ui::DatasetBrowser*>(window.view(MainWindow::View::Dataset));
    if (o.image_id >= 0) {
      auto* once = new QObject(browser);
      QObject::connect(browser, &mrcnn::ui::DatasetBrowser::datasetLoaded, once,
                       [browser, once, id = o.image_id](bool ok) {
                         if (ok) browser->selectImage(id);
                         once->deleteLater();
                       });
    }
    browser->openDataset(o.dataset, o.images);
    if (o.dataset_statistics) browser->showStatistics();
  }
  auto* predictions =
      qobject_cast<mrcnn::ui::PredictionView*>(window.view(MainWindow::View::Predictions));
  if (!o.checkpoint.isEmpty()) predictions->setCheckpoint(o.checkpoint);
  if (!o.ground_truth.isEmpty()) predictions->setAnnotations(o.ground_truth);
  if (o.score_threshold >= 0) predictions->setScoreThreshold(o.score_threshold);
  if (!o.results.isEmpty()) {
    if (!o.ground_truth.isEmpty())
      predictions->setMode(mrcnn::ui::PredictionView::Mode::SideBySide);
    if (o.result_image > 0) {
      // The n-th image of the results instead of the first, once they are read.
      auto* once = new QObject(predictions);
      QObject::connect(predictions, &mrcnn::ui::PredictionView::resultsLoaded, once,
                       [predictions, once, n = o.result_image](bool ok) {
                         if (ok) predictions->selectImage(n - 1);
                         once->deleteLater();
                       });
    }
    predictions->showResults(o.results, o.results_images, o.ground_truth);
  }
  if (!o.warnings.isEmpty()) {
    auto* review = qobject_cast<mrcnn::ui::WarningReview*>(window.view(MainWindow::View::Warnings));
    if (o.warning_entry > 0) {
      auto* once = new QObject(review);
      QObject::connect(review, &mrcnn::ui::WarningReview::reportLoaded, once,
                       [review, once, n = o.warning_entry](bool ok) {
                         if (ok) review->selectEntry(n - 1);
                         once->deleteLater();
                       });
    }
    review->openReport(o.warnings, o.warnings_annotations, o.warnings_images);
  }
  if (!o.analysis.isEmpty()) {
    auto* analysis =
        qobject_cast<mrcnn::ui::AnalysisView*>(window.view(MainWindow::View::Analysis));
    QString error;
    if (analysis->openMetrics(o.analysis, &error)) {
      if (o.analysis_class >= 0) analysis->selectClass(o.analysis_class);
      if (o.analysis_row >= 0) analysis->showCell(o.analysis_row, o.analysis_column);
    } else {
      errors << u"--analysis: "_qs + error;
    }
  }
  if (!o.prune_result.isEmpty()) {
    QString error;
    if (!window.pruneFlow()->openResult(o.prune_result, &error))
      errors << u"--prune-result: "_qs + error;
  }
  if (!o.export_result.isEmpty()) {
    QString error;
    if (!window.exportFlow()->openResult(o.export_result, &error))
      errors << u"--export-result: "_qs + error;
  }
  if (!o.new_experiment.isEmpty()) {
    if (!QFileInfo::exists(o.new_experiment)) {
      errors << u"--new-experiment: "_qs + o.new_experiment + u" does not exist"_qs;
    } else {
      mrcnn::ui::NewExperimentWizard* wizard = window.newExperiment();
      wizard->dataPage()->setInput(o.new_experiment);
      if (!o.experiment_folder.isEmpty()) wizard->dataPage()->setExperimentDir(o.experiment_folder);
      wizard->advanceTo(
          static_cast<mrcnn::ui::NewExperimentWizard::PageId>(o.new_experiment_page - 1));
    }
  }
  return errors;
}

// The window's command line, parsed and checked before any window exists: --help, --version
// and every error work on a terminal without a display.
struct CommandLine {
  QStringList specs;
  int view = 0;  // 1-6; 0: the default
  QString screenshot;
  int screenshot_delay_ms = 1500;
  Opened opened;
};

// The exit code when the process ends here (help, version, an error), else nullopt.
std::optional<int> parseCommandLine(const QStringList& args, CommandLine* cl) {
  QCommandLineParser parser;
  parser.setApplicationDescription(
      u"The Mask R-CNN workbench. Run tasks without windows with --headless SPEC [--task T]."_qs);
  const QCommandLineOption help = parser.addHelpOption();
  const QCommandLineOption version({u"version"_qs}, u"Print the versions and exit."_qs);
  parser.addPositionalArgument(u"spec"_qs, u"An experiment spec to open."_qs, u"[SPEC]"_qs);
  const QCommandLineOption view({u"view"_qs}, u"Show view N first (1-6)."_qs, u"N"_qs);
  const QCommandLineOption screenshot(
      {u"screenshot"_qs},
      u"Save the window (or the --prune-result or --export-result dialog) as PNG once shown, "
      u"then exit."_qs,
      u"PNG"_qs);
  const QCommandLineOption run({u"run"_qs}, u"Open a run directory (repeat to overlay runs)."_qs,
                               u"DIR"_qs);
  const QCommandLineOption dataset({u"dataset"_qs}, u"Browse a COCO annotation file."_qs,
                                   u"JSON"_qs);
  const QCommandLineOption images({u"images"_qs}, u"The --dataset's image folder."_qs, u"DIR"_qs);
  const QCommandLineOption image_id({u"image-id"_qs},
                                    u"Dataset: show this image (its COCO id) first."_qs, u"N"_qs);
  const QCommandLineOption results(
      {u"results"_qs}, u"Show an inference's results.json in Predictions."_qs, u"JSON"_qs);
  const QCommandLineOption results_images(
      {u"results-images"_qs}, u"The folder the results' file names are relative to."_qs, u"DIR"_qs);
  const QCommandLineOption ground_truth(
      {u"ground-truth"_qs}, u"Annotations shown beside the predictions."_qs, u"JSON"_qs);
  const QCommandLineOption checkpoint(
      {u"checkpoint"_qs}, u"The checkpoint Predictions runs inference with."_qs, u"FILE"_qs);
  const QCommandLineOption score_threshold(
      {u"score-threshold"_qs}, u"Predictions: hide detections below T (0-1)."_qs, u"T"_qs);
  const QCommandLineOption result_image(
      {u"result-image"_qs}, u"Predictions: show the N-th image of the results (1 = first)."_qs,
      u"N"_qs);
  const QCommandLineOption warnings(
      {u"warnings"_qs}, u"Review a dataset_convert warnings or report file."_qs, u"REPORT"_qs);
  const QCommandLineOption warnings_annotations(
      {u"warnings-annotations"_qs}, u"The annotation file the report is about."_qs, u"JSON"_qs);
  const QCommandLineOption warnings_images({u"warnings-images"_qs}, u"Its image folder."_qs,
                                           u"DIR"_qs);
  const QCommandLineOption warning_entry(
      {u"warning-entry"_qs}, u"Warnings: show the N-th entry of the report (1 = first)."_qs,
      u"N"_qs);
  const QCommandLineOption dataset_statistics(
      {u"dataset-statistics"_qs}, u"Dataset: show the Statistics tab (the dataset check)."_qs);
  const QCommandLineOption analysis(
      {u"analysis"_qs}, u"Open an evaluation's metrics file in Analysis."_qs, u"METRICS"_qs);
  const QCommandLineOption analysis_class(
      {u"analysis-class"_qs}, u"Analysis: select the class with this category id."_qs, u"ID"_qs);
  const QCommandLineOption analysis_cell({u"analysis-cell"_qs},
                                         u"Analysis: list the images of a confusion cell."_qs,
                                         u"ROW,COLUMN"_qs);
  const QCommandLineOption prune_result(
      {u"prune-result"_qs}, u"Show a prune's result (its output folder, with status.json)."_qs,
      u"DIR"_qs);
  const QCommandLineOption export_result(
      {u"export-result"_qs}, u"Show an export's report (its folder, with export_report.json)."_qs,
      u"DIR"_qs);
  const QCommandLineOption new_experiment(
      {u"new-experiment"_qs}, u"Open File > New Experiment from Data... on this folder or file."_qs,
      u"DATA"_qs);
  const QCommandLineOption experiment_folder(
      {u"experiment-folder"_qs}, u"New experiment: the folder it is written to."_qs, u"DIR"_qs);
  const QCommandLineOption new_experiment_page(
      {u"new-experiment-page"_qs},
      u"New experiment: step on to page N (1 data, 2 import, 3 check, 4 start)."_qs, u"N"_qs);
  const QCommandLineOption delay({u"screenshot-delay"_qs},
                                 u"Milliseconds to wait before the screenshot (1500)."_qs, u"MS"_qs,
                                 u"1500"_qs);
  for (const auto* o : {&version,
                        &view,
                        &screenshot,
                        &run,
                        &dataset,
                        &images,
                        &image_id,
                        &results,
                        &results_images,
                        &ground_truth,
                        &checkpoint,
                        &score_threshold,
                        &result_image,
                        &warnings,
                        &warnings_annotations,
                        &warnings_images,
                        &warning_entry,
                        &dataset_statistics,
                        &analysis,
                        &analysis_class,
                        &analysis_cell,
                        &prune_result,
                        &export_result,
                        &new_experiment,
                        &experiment_folder,
                        &new_experiment_page,
                        &delay})
    parser.addOption(*o);

  const auto usage = [](const std::string& message) {
    std::cerr << "mrcnn-workbench: " << message << "\n(mrcnn-workbench --help lists the options)\n";
    return 2;
  };
  if (!parser.parse(args)) return usage(parser.errorText().toStdString());
  if (parser.isSet(help)) {
    // Qt names the program after the QApplication, which does not exist yet (--help works
    // without a display): its usage line says "<executable_name>". The line is ours.
    const std::string program = QFileInfo(args.front()).fileName().toStdString();
    const QString text = parser.helpText();
    std::cout << "Usage: " << program << " [options] [SPEC]\n"
              << "       " << program << " --headless SPEC [--task TASK] ...\n"
              << text.mid(text.indexOf(u'\n') + 1).toStdString() << "\nWithout windows: " << program
              << " --headless --help\n";
    return 0;
  }
  if (parser.isSet(version)) {
    std::cout << "mrcnn-workbench " << MRCNN_VERSION << " (Qt " << qVersion() << ")\n";
    return 0;
  }
  // A whole number from `min` to `max` into *out, or the usage error naming the option.
  const auto number = [&](const QCommandLineOption& o, long long min, long long max, long long* out,
                          const char* what) -> std::optional<int> {
    bool ok = false;
    *out = parser.value(o).toLongLong(&ok);
    if (!ok || *out < min || *out > max)
      return usage("--" + o.names().front().toStdString() + " takes " + what);
    return std::nullopt;
  };
  constexpr long long kMaxInt = std::numeric_limits<int>::max();
  long long n = 0;
  cl->specs = parser.positionalArguments();
  if (parser.isSet(view)) {
    if (auto e = number(view, 1, mrcnn::ui::MainWindow::kViewCount, &n, "1 to 6")) return e;
    cl->view = static_cast<int>(n);
  }
  Opened& o = cl->opened;
  o.runs = parser.values(run);
  o.dataset = parser.value(dataset);
  o.images = parser.value(images);
  o.results = parser.value(results);
  o.results_images = parser.value(results_images);
  o.ground_truth = parser.value(ground_truth);
  o.checkpoint = parser.value(checkpoint);
  o.warnings = parser.value(warnings);
  o.warnings_annotations = parser.value(warnings_annotations);
  o.warnings_images = parser.value(warnings_images);
  if (parser.isSet(warning_entry)) {
    if (auto e = number(warning_entry, 1, kMaxInt, &n, "a number from 1")) return e;
    o.warning_entry = static_cast<int>(n);
  }
  if (parser.isSet(image_id)) {
    if (auto e = number(image_id, 0, std::numeric_limits<long long>::max(), &n, "an image id"))
      return e;
    o.image_id = n;
  }
  if (parser.isSet(result_image)) {
    if (auto e = number(result_image, 1, kMaxInt, &n, "a number from 1")) return e;
    o.result_image = static_cast<int>(n);
  }
  if (parser.isSet(score_threshold)) {
    bool ok = false;
    o.score_threshold = parser.value(score_threshold).toDouble(&ok);
    if (!ok || o.score_threshold < 0 || o.score_threshold > 1)
      return usage("--score-threshold takes a number from 0 to 1");
  }
  o.analysis = parser.value(analysis);
  o.prune_result = parser.value(prune_result);
  o.export_result = parser.value(export_result);
  o.new_experiment = parser.value(new_experiment);
  o.experiment_folder = parser.value(experiment_folder);
  if (parser.isSet(new_experiment_page)) {
    if (auto e = number(new_experiment_page, 1, 4, &n, "1 to 4")) return e;
    o.new_experiment_page = static_cast<int>(n);
  }
  o.dataset_statistics = parser.isSet(dataset_statistics);
  if (parser.isSet(analysis_class)) {
    if (auto e =
            number(analysis_class, 0, std::numeric_limits<long long>::max(), &n, "a category id"))
      return e;
    o.analysis_class = n;
  }
  if (parser.isSet(analysis_cell)) {
    const QStringList cell = parser.value(analysis_cell).split(u',');
    bool row_ok = false, column_ok = false;
    if (cell.size() == 2) {
      o.analysis_row = cell[0].toInt(&row_ok);
      o.analysis_column = cell[1].toInt(&column_ok);
    }
    if (!row_ok || !column_ok || o.analysis_row < 0 || o.analysis_column < 0)
      return usage("--analysis-cell takes ROW,COLUMN (numbers from 0)");
  }
  if (const QString error = missingCompanions(o); !error.isEmpty())
    return usage(error.toStdString());
  if (parser.isSet(screenshot)) {
    cl->screenshot = parser.value(screenshot);
    if (auto e = number(delay, 0, kMaxInt, &n, "milliseconds")) return e;
    cl->screenshot_delay_ms = static_cast<int>(n);
  }
  return std::nullopt;
}

// The arguments without those QApplication takes for itself (-geometry WxH+X+Y, -style S,
// -platform P, -reverse, ...), which the parser above must not call unknown: they reach
// QApplication untouched.
QStringList withoutQtOptions(const QStringList& args) {
  static const QStringList with_value = {u"-platform"_qs,
                                         u"-platformpluginpath"_qs,
                                         u"-platformtheme"_qs,
                                         u"-plugin"_qs,
                                         u"-qwindowgeometry"_qs,
                                         u"-geometry"_qs,
                                         u"-qwindowtitle"_qs,
                                         u"-title"_qs,
                                         u"-qwindowicon"_qs,
                                         u"-icon"_qs,
                                         u"-display"_qs,
                                         u"-style"_qs,
                                         u"-stylesheet"_qs,
                                         u"-session"_qs,
                                         u"-name"_qs,
                                         u"-dialogs"_qs,
                                         u"-fontengine"_qs,
                                         u"-qmljsdebugger"_qs};
  static const QStringList flags = {u"-reverse"_qs, u"-widgetcount"_qs, u"-nograb"_qs,
                                    u"-dograb"_qs,  u"-sync"_qs,        u"-testability"_qs};
  QStringList out;
  for (int i = 0; i < args.size(); ++i) {
    const QString& a = args[i];
    const QString name = a.section(u'=', 0, 0);
    if (i > 0 && flags.contains(a)) continue;
    if (i > 0 && with_value.contains(name)) {
      if (!a.contains(u'=')) ++i;  // its value is the next argument
      continue;
    }
    out << a;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--headless") == 0) {
      std::vector<std::string> rest;
      for (int k = 1; k < argc; ++k) {
        if (k != i) rest.emplace_back(argv[k]);
      }
      return mrcnn::app::runHeadless(rest, argv[0]);
    }
  }
  QStringList args;
  for (int i = 0; i < argc; ++i)
    args << QString::fromLocal8Bit(argv[i]);
  CommandLine cl;
  if (const std::optional<int> code = parseCommandLine(withoutQtOptions(args), &cl)) return *code;

  QApplication app(argc, argv);
  QApplication::setOrganizationName(u"mrcnn-workbench"_qs);
  QApplication::setApplicationName(u"mrcnn-workbench"_qs);
  QApplication::setApplicationDisplayName(u"Mask R-CNN Workbench"_qs);
  QApplication::setDesktopFileName(u"mrcnn-workbench"_qs);
  QApplication::setWindowIcon(QIcon(u":/icons/mrcnn-workbench.svg"_qs));

  mrcnn::ui::MainWindow window;
  if (!cl.specs.isEmpty()) window.openSpec(cl.specs.front());
  if (cl.view > 0) window.showView(static_cast<mrcnn::ui::MainWindow::View>(cl.view - 1));
  const QStringList errors = openAll(window, cl.opened);
  for (const QString& error : errors)
    std::cerr << "mrcnn-workbench: " << error.toStdString() << '\n';
  // A screenshot would not show what was asked for: the files could not be used.
  if (!errors.isEmpty() && !cl.screenshot.isEmpty()) return mrcnn::engine::kExitBadData;
  if (cl.specs.isEmpty() && cl.view == 0 && opensNothing(cl.opened)) window.showStartPage();
  window.show();
  if (!errors.isEmpty()) {
    auto* box = new QMessageBox(QMessageBox::Warning, QApplication::applicationDisplayName(),
                                u"Not opened:\n"_qs + errors.join(u'\n'), QMessageBox::Ok, &window);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
  }

  if (!cl.screenshot.isEmpty()) {
    // Long enough for the first layout and paint of every view, and the files read off the
    // UI thread.
    QTimer::singleShot(cl.screenshot_delay_ms, &window, [&window, out = cl.screenshot] {
      QWidget* dialog = window.pruneFlow()->resultDialog();
      if (window.exportFlow()->resultDialog()) dialog = window.exportFlow()->resultDialog();
      if (auto* wizard = window.findChild<mrcnn::ui::NewExperimentWizard*>()) dialog = wizard;
      if (!(dialog ? dialog->grab() : window.grab()).save(out)) {
        std::cerr << "mrcnn-workbench: cannot write " << out.toStdString() << '\n';
        QApplication::exit(1);
        return;
      }
      QApplication::exit(0);
    });
  }
  return app.exec();
}

// mrcnn-workbench: the desktop workbench, or with --headless the same engine from a terminal.
//
//   mrcnn-workbench [SPEC] [--view N] [--run DIR]... [--dataset JSON --images DIR [--image-id N]]
//                   [--results JSON --results-images DIR [--ground-truth JSON]]
//                   [--checkpoint FILE] [--score-threshold T] [--result-image N]
//                   [--warnings REPORT
//                   --warnings-annotations JSON
//                   --warnings-images DIR [--warning-entry N]] [--screenshot PNG
//                   [--screenshot-delay MS]]
//   mrcnn-workbench --headless SPEC [--task TASK] ...      (see app/headless.h)
//
// --view N shows view N (1 Experiments ... 5 Warnings) first; the other options open what each
// view shows (the same as its Open buttons); --screenshot grabs the window once it is laid
// out and its files are read, saves it as PNG and exits (how the screenshots in docs/ are
// taken, under Xvfb).
#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QTimer>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "app/headless.h"
#include "ui/dataset_browser/dataset_browser.h"
#include "ui/main_window/main_window.h"
#include "ui/predictions/prediction_view.h"
#include "ui/run_monitor/runs_view.h"
#include "ui/warnings/warning_review.h"

namespace {

using mrcnn::ui::MainWindow;

// What the view options ask for, opened in the window's views.
struct Opened {
  QStringList runs;
  QString dataset, images;
  qint64 image_id = -1;
  QString results, results_images, ground_truth, checkpoint;
  double score_threshold = -1;
  int result_image = 0;
  QString warnings, warnings_annotations, warnings_images;
  int warning_entry = 0;
};

// Returns an error message for options given without their companions ("" when fine).
QString openAll(MainWindow& window, const Opened& o) {
  if (!o.dataset.isEmpty() != !o.images.isEmpty()) return u"--dataset and --images go together"_qs;
  if (!o.results.isEmpty() && o.results_images.isEmpty())
    return u"--results needs --results-images (the folder its file names are relative to)"_qs;
  if (!o.warnings.isEmpty() && (o.warnings_annotations.isEmpty() || o.warnings_images.isEmpty()))
    return u"--warnings needs --warnings-annotations and --warnings-images"_qs;
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
  return {};
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

  QApplication app(argc, argv);
  QApplication::setOrganizationName(u"mrcnn-workbench"_qs);
  QApplication::setApplicationName(u"mrcnn-workbench"_qs);
  QApplication::setApplicationDisplayName(u"Mask R-CNN Workbench"_qs);
  QApplication::setDesktopFileName(u"mrcnn-workbench"_qs);
  QApplication::setWindowIcon(QIcon(u":/icons/mrcnn-workbench.svg"_qs));

  QCommandLineParser parser;
  parser.setApplicationDescription(
      u"The Mask R-CNN workbench. Run tasks without windows with --headless SPEC [--task T]."_qs);
  parser.addHelpOption();
  parser.addPositionalArgument(u"spec"_qs, u"An experiment spec to open."_qs, u"[SPEC]"_qs);
  const QCommandLineOption view({u"view"_qs}, u"Show view N first (1-5)."_qs, u"N"_qs);
  const QCommandLineOption screenshot(
      {u"screenshot"_qs}, u"Save the window as PNG once shown, then exit."_qs, u"PNG"_qs);
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
  const QCommandLineOption delay({u"screenshot-delay"_qs},
                                 u"Milliseconds to wait before the screenshot (1500)."_qs, u"MS"_qs,
                                 u"1500"_qs);
  for (const auto* o :
       {&view, &screenshot, &run, &dataset, &images, &image_id, &results, &results_images,
        &ground_truth, &checkpoint, &score_threshold, &result_image, &warnings,
        &warnings_annotations, &warnings_images, &warning_entry, &delay})
    parser.addOption(*o);
  parser.process(app);

  mrcnn::ui::MainWindow window;
  const QStringList specs = parser.positionalArguments();
  if (!specs.isEmpty()) window.openSpec(specs.front());
  if (parser.isSet(view)) {
    const int n = parser.value(view).toInt();
    if (n < 1 || n > mrcnn::ui::MainWindow::kViewCount) {
      std::cerr << "mrcnn-workbench: --view takes 1 to 5\n";
      return 2;
    }
    window.showView(static_cast<mrcnn::ui::MainWindow::View>(n - 1));
  }
  Opened opened;
  opened.runs = parser.values(run);
  opened.dataset = parser.value(dataset);
  opened.images = parser.value(images);
  opened.results = parser.value(results);
  opened.results_images = parser.value(results_images);
  opened.ground_truth = parser.value(ground_truth);
  opened.checkpoint = parser.value(checkpoint);
  opened.warnings = parser.value(warnings);
  if (parser.isSet(warning_entry)) {
    bool number = false;
    opened.warning_entry = parser.value(warning_entry).toInt(&number);
    if (!number || opened.warning_entry < 1) {
      std::cerr << "mrcnn-workbench: --warning-entry takes a number from 1\n";
      return 2;
    }
  }
  if (parser.isSet(image_id)) {
    bool number = false;
    opened.image_id = parser.value(image_id).toLongLong(&number);
    if (!number || opened.image_id < 0) {
      std::cerr << "mrcnn-workbench: --image-id takes an image id\n";
      return 2;
    }
  }
  if (parser.isSet(result_image)) {
    bool number = false;
    opened.result_image = parser.value(result_image).toInt(&number);
    if (!number || opened.result_image < 1) {
      std::cerr << "mrcnn-workbench: --result-image takes a number from 1\n";
      return 2;
    }
  }
  if (parser.isSet(score_threshold)) {
    bool number = false;
    opened.score_threshold = parser.value(score_threshold).toDouble(&number);
    if (!number || opened.score_threshold < 0 || opened.score_threshold > 1) {
      std::cerr << "mrcnn-workbench: --score-threshold takes a number from 0 to 1\n";
      return 2;
    }
  }
  opened.warnings_annotations = parser.value(warnings_annotations);
  opened.warnings_images = parser.value(warnings_images);
  if (const QString error = openAll(window, opened); !error.isEmpty()) {
    std::cerr << "mrcnn-workbench: " << error.toStdString() << '\n';
    return 2;
  }
  window.show();

  if (parser.isSet(screenshot)) {
    const QString out = parser.value(screenshot);
    bool ok = false;
    const int wait_ms = parser.value(delay).toInt(&ok);
    if (!ok || wait_ms < 0) {
      std::cerr << "mrcnn-workbench: --screenshot-delay takes milliseconds\n";
      return 2;
    }
    // Long enough for the first layout and paint of every view, and the files read off the
    // UI thread.
    QTimer::singleShot(wait_ms, &window, [&window, out] {
      if (!window.grab().save(out)) {
        std::cerr << "mrcnn-workbench: cannot write " << out.toStdString() << '\n';
        QApplication::exit(1);
        return;
      }
      QApplication::exit(0);
    });
  }
  return app.exec();
}

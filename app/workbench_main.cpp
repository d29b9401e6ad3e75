// mrcnn-workbench: the desktop workbench, or with --headless the same engine from a terminal.
//
//   mrcnn-workbench [SPEC] [--view N] [--screenshot PNG]
//   mrcnn-workbench --headless SPEC [--task TASK] ...      (see app/headless.h)
//
// --view N shows view N (1 Experiments ... 5 Warnings) first; --screenshot grabs the window
// once it is laid out, saves it as PNG and exits (how the screenshots in docs/ are taken).
#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QTimer>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "app/headless.h"
#include "ui/main_window/main_window.h"

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
  parser.addOption(view);
  parser.addOption(screenshot);
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
  window.show();

  if (parser.isSet(screenshot)) {
    const QString out = parser.value(screenshot);
    // Long enough for the first layout and paint of every view.
    QTimer::singleShot(1500, &window, [&window, out] {
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

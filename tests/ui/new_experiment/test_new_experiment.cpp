// File › New Experiment from Data…, driven as a person would on real files: LabelMe's JSON
// beside VOC photos (../shared/data/labelme_voc2011) with LabelMe's labels.txt, and tinycoco as
// COCO. The detected format, the import's report, the dataset check, and the spec written:
// it validates, and its num_classes, data paths, checkpoint and depth are the ones chosen.
// Bad input (a malformed LabelMe file, a non-empty experiment folder, a missing weights file)
// shows its error naming the file and writes nothing. The start page's buttons, and
// `mrcnn-workbench --help`'s first line.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QCommandLinkButton>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QRadioButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeWidget>
#include <QtTest>
#include <set>

#include "specs/spec.h"
#include "ui/dataset_browser/dataset_stats_view.h"
#include "ui/main_window/main_window.h"
#include "ui/main_window/recent_items.h"
#include "ui/main_window/recent_panel.h"
#include "ui/main_window/start_page.h"
#include "ui/new_experiment/check_page.h"
#include "ui/new_experiment/data_page.h"
#include "ui/new_experiment/experiment_spec.h"
#include "ui/new_experiment/new_experiment_wizard.h"
#include "ui/new_experiment/report_page.h"
#include "ui/new_experiment/weights_page.h"
#include "ui/spec_editor/spec_editor.h"

using namespace mrcnn::ui;

namespace {

constexpr int kImportTimeoutMs = 60000;

QString sharedData(const QString& relative) {
  const QString root = qEnvironmentVariable("MRCNN_SHARED_DIR");
  if (root.isEmpty()) qFatal("MRCNN_SHARED_DIR is not set (ctest sets it)");
  return QDir(root).filePath(u"data/"_qs + relative);
}

// The distinct shape labels of LabelMe files, read here with Qt's JSON rather than the
// importer: what the categories must be.
std::set<QString> labelMeLabels(const QString& folder, const std::set<QString>& ignored) {
  std::set<QString> labels;
  for (const QString& name : QDir(folder).entryList({u"*.json"_qs}, QDir::Files)) {
    QFile f(QDir(folder).filePath(name));
    if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(f.fileName()));
    for (const QJsonValue& shape : QJsonDocument::fromJson(f.readAll())["shapes"].toArray()) {
      const QString label = shape[u"label"_qs].toString();
      if (!ignored.count(label)) labels.insert(label);
    }
  }
  return labels;
}

// The wizard on `data`, stepped to the start page through the import and the check.
void importInto(NewExperimentWizard& wizard, const QString& data, const QString& folder) {
  wizard.show();
  wizard.dataPage()->setInput(data);
  wizard.dataPage()->setExperimentDir(folder);
  wizard.advanceTo(NewExperimentWizard::kWeightsPage);
}

}  // namespace

class NewExperimentTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName(u"mrcnn-workbench-test"_qs);
    QCoreApplication::setApplicationName(u"test_ui_new_experiment"_qs);
    QStandardPaths::setTestModeEnabled(true);  // the example goes to a test folder
    QVERIFY(settings_dir_.isValid());
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, settings_dir_.path());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settings_dir_.path());
  }

  void init() { QSettings().clear(); }

  // The canvas and the schedule, worked by hand.
  void canvasAndScheduleFromTheData() {
    // VOC's 500x375 photos: 375 -> 384, 500 -> 512.
    QCOMPARE(suggestedCanvas({{{500, 375}, 3}}), std::make_pair(384, 512));
    // 4000x3000 is shrunk by 832/3000 to 1109x832, then 1109 -> 1152.
    QCOMPARE(suggestedCanvas({{{4000, 3000}, 1}}), std::make_pair(832, 1152));
    // The median, not the largest: two 640x480 and one 1280x960.
    QCOMPARE(suggestedCanvas({{{640, 480}, 2}, {{1280, 960}, 1}}), std::make_pair(512, 640));
    const Schedule s = scheduleFor(/*train_images=*/100, /*epochs=*/24, /*batch_size=*/2);
    QCOMPARE(s.steps_per_epoch, 50);
    QCOMPARE(s.total_steps, 1200);
    QCOMPARE(s.steps_per_eval, 100);  // every 2 epochs: about ten evaluations
    QCOMPARE(s.decay_steps, (std::vector<int>{800, 1066}));
    QCOMPARE(s.learning_rate, 0.0025);
    QVERIFY(scheduleFor(3, 2, 2).decay_steps.empty());  // 4 steps: no room to decay
  }

  // LabelMe photos with LabelMe's labels.txt, from an ImageNet ResNet-18 by name.
  void labelMeToASpecThatValidates() {
    QTemporaryDir tmp;
    const QString data = sharedData(u"labelme_voc2011/data_annotated"_qs);
    const QString folder = tmp.filePath(u"experiment"_qs);
    NewExperimentWizard wizard;
    QSignalSpy written(&wizard, &NewExperimentWizard::specWritten);
    DataPage* page = wizard.dataPage();
    page->setInput(data);
    QCOMPARE(page->detectedFormat(), u"labelme"_qs);
    QVERIFY2(page->detectedLabel()->text().contains(u"LabelMe"_qs),
             qPrintable(page->detectedLabel()->text()));
    page->findChild<QLineEdit*>(u"labels"_qs)
        ->setText(sharedData(u"labelme_voc2011/labels.txt"_qs));
    page->split()->setText(u"train=0.6"_qs);  // does not add up: refused until fixed
    QVERIFY(!page->isComplete());
    page->split()->setText(u"train=0.6,val=0.4"_qs);
    QVERIFY(page->isComplete());
    importInto(wizard, data, folder);
    QTRY_COMPARE_WITH_TIMEOUT(wizard.currentId(), int(NewExperimentWizard::kWeightsPage),
                              kImportTimeoutMs);

    // The report: LabelMe's labels.txt conventions (no __ignore__, no _background_ class).
    const auto imported = wizard.reportPage()->data();
    QVERIFY(imported);
    const std::set<QString> labels = labelMeLabels(data, {u"__ignore__"_qs, u"_background_"_qs});
    for (const QString& label : labels) {
      QVERIFY2(std::count(imported->summary.categories.begin(), imported->summary.categories.end(),
                          label.toStdString()) == 1,
               qPrintable(label));
    }
    QCOMPARE(imported->summary.categories.size(), size_t{20});  // the 20 VOC classes listed
    QCOMPARE(imported->train_images + imported->val_images, int64_t{3});
    QVERIFY(imported->val_images >= 1);
    QVERIFY2(wizard.reportPage()->summaryText()->toPlainText().contains(u"labelme"_qs),
             qPrintable(wizard.reportPage()->summaryText()->toPlainText()));
    // The check: the Statistics tab's charts, filled from the written files.
    QVERIFY(!wizard.checkPage()->statsView()->bars(0).isEmpty());
    QCOMPARE(imported->image_height % 64, 0);
    QCOMPARE(imported->image_width % 64, 0);

    // The start: ResNet-18 by name; the backbone follows the weights.
    WeightsPage* start = wizard.weightsPage();
    QVERIFY(start->setWeightsName(u"torchvision:resnet18"_qs));
    QCOMPARE(start->depth()->currentData().toInt(), 18);
    QVERIFY(!start->depth()->isEnabled());
    start->specName()->setText(u"voc people"_qs);  // made a file name
    QVERIFY(start->isComplete());
    wizard.button(QWizard::FinishButton)->click();
    QVERIFY2(written.size() == 1, qPrintable(start->errorLabel()->text()));
    const QString spec_path = written.front().front().toString();
    QCOMPARE(spec_path, QDir(folder).filePath(u"voc_people.txt"_qs));

    const mrcnn::spec::LoadedSpec loaded = mrcnn::spec::loadSpecFile(spec_path.toStdString());
    QVERIFY2(loaded.ok(), loaded.errors().empty() ? "" : loaded.errors().front().format().c_str());
    QCOMPARE(loaded.spec.data_config().num_classes(), 21u);
    QCOMPARE(loaded.spec.checkpoint(), std::string("torchvision:resnet18"));
    QCOMPARE(loaded.spec.maskrcnn_config().nlayers(), 18u);
    const auto& r = loaded.resolved;
    QCOMPARE(QString::fromStdString(r.train_json_file.string()),
             QDir(folder).filePath(u"dataset/annotations/instances_train.json"_qs));
    QCOMPARE(QString::fromStdString(r.val_json_file.string()),
             QDir(folder).filePath(u"dataset/annotations/instances_val.json"_qs));
    QVERIFY(QFile::exists(QString::fromStdString(r.train_json_file.string())));
    QVERIFY(QFile::exists(QString::fromStdString(r.val_json_file.string())));
    QCOMPARE(QString::fromStdString(r.train_image_dir.string()),
             QDir(folder).filePath(u"dataset"_qs));
    QCOMPARE(r.image_height, imported->image_height);
    QCOMPARE(r.output_dir, std::filesystem::path(QDir(folder).filePath(u"runs"_qs).toStdString()));
    // The class mapping is in the spec, as comments (the spec has no field for it).
    QFile text(spec_path);
    QVERIFY(text.open(QIODevice::ReadOnly));
    const QString content = QString::fromUtf8(text.readAll());
    for (const QString& label : labels)
      QVERIFY2(content.contains(u"#   "_qs) && content.contains(u' ' + label + u'\n'),
               qPrintable(label));
  }

  // tinycoco as COCO, fine-tuned from COCO Mask R-CNN by name: torchvision's anchors.
  void cocoFromCocoMaskRcnn() {
    QTemporaryDir tmp;
    const QString data = sharedData(u"tinycoco"_qs);
    NewExperimentWizard wizard;
    wizard.dataPage()->setInput(data);
    QCOMPARE(wizard.dataPage()->detectedFormat(), u"coco"_qs);
    importInto(wizard, data, tmp.filePath(u"coco"_qs));
    QTRY_COMPARE_WITH_TIMEOUT(wizard.currentId(), int(NewExperimentWizard::kWeightsPage),
                              kImportTimeoutMs);
    const auto imported = wizard.reportPage()->data();
    QVERIFY(imported && !imported->val_json.empty());
    WeightsPage* start = wizard.weightsPage();
    QVERIFY(start->setWeightsName(u"torchvision:maskrcnn_resnet50_fpn"_qs));
    QCOMPARE(start->depth()->currentData().toInt(), 50);
    QVERIFY(!start->addAnchor()->isEnabled());
    wizard.button(QWizard::FinishButton)->click();
    const QString spec_path = wizard.writtenSpec();
    QVERIFY(!spec_path.isEmpty());
    const mrcnn::spec::LoadedSpec loaded = mrcnn::spec::loadSpecFile(spec_path.toStdString());
    QVERIFY(loaded.ok());
    QCOMPARE(loaded.spec.data_config().num_classes(),
             static_cast<uint32_t>(imported->summary.categories.size() + 1));
    QCOMPARE(loaded.spec.checkpoint(), std::string("torchvision:maskrcnn_resnet50_fpn"));
    QCOMPARE(loaded.spec.maskrcnn_config().anchor_style(), std::string("torchvision"));
    QCOMPARE(loaded.resolved.val_json_file, imported->val_json);
  }

  // A malformed LabelMe file: the error names it, Next stays off, nothing is written; Back,
  // and the same folder can be used once the data is fixed.
  void badInputShowsItsErrorAndWritesNothing() {
    QTemporaryDir tmp;
    const QString data = tmp.filePath(u"bad"_qs);
    QVERIFY(QDir().mkpath(data));
    QFile::copy(sharedData(u"labelme_voc2011/data_annotated/2011_000003.jpg"_qs),
                QDir(data).filePath(u"a.jpg"_qs));
    {
      QFile f(QDir(data).filePath(u"a.json"_qs));
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(
          "{\"version\": \"5.0.1\", \"shapes\": [\n  {\"label\": \"cat\", \"points\": [[1, 2],"
          " [3\n");
    }
    const QString folder = tmp.filePath(u"experiment"_qs);
    NewExperimentWizard wizard;
    QSignalSpy finished(wizard.reportPage(), &ReportPage::importFinished);
    importInto(wizard, data, folder);
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, kImportTimeoutMs);
    QCOMPARE(finished.front().front().toBool(), false);
    QCOMPARE(wizard.currentId(), int(NewExperimentWizard::kReportPage));
    const QString status = wizard.reportPage()->statusLabel()->text();
    QVERIFY2(status.contains(u"a.json"_qs) && status.contains(u"malformed JSON"_qs),
             qPrintable(status));
    QVERIFY(!wizard.reportPage()->isComplete());
    QVERIFY(!wizard.button(QWizard::NextButton)->isEnabled());
    QVERIFY(!QFileInfo::exists(QDir(folder).filePath(u"dataset"_qs)));
    QVERIFY(QDir(folder).entryList(QDir::AllEntries | QDir::NoDotAndDotDot).isEmpty());
  }

  // The experiment folder must be empty; a missing weights file is refused before writing.
  void foldersAndFilesThatCannotBeUsed() {
    QTemporaryDir tmp;
    const QString folder = tmp.filePath(u"full"_qs);
    QVERIFY(QDir().mkpath(folder));
    QFile(QDir(folder).filePath(u"notes.txt"_qs)).open(QIODevice::WriteOnly);
    NewExperimentWizard wizard;
    wizard.show();
    wizard.dataPage()->setInput(sharedData(u"labelme_voc2011/data_annotated"_qs));
    wizard.dataPage()->setExperimentDir(folder);
    wizard.next();
    QCOMPARE(wizard.currentId(), int(NewExperimentWizard::kDataPage));
    const QString error = wizard.dataPage()->errorLabel()->text();
    QVERIFY2(error.contains(u"not empty"_qs) && error.contains(u"notes.txt"_qs), qPrintable(error));

    const QString empty = tmp.filePath(u"new"_qs);
    wizard.dataPage()->setExperimentDir(empty);
    wizard.advanceTo(NewExperimentWizard::kWeightsPage);
    QTRY_COMPARE_WITH_TIMEOUT(wizard.currentId(), int(NewExperimentWizard::kWeightsPage),
                              kImportTimeoutMs);
    wizard.weightsPage()->setWeightsFile(tmp.filePath(u"no-such.pth"_qs));
    wizard.button(QWizard::FinishButton)->click();
    QVERIFY(wizard.isVisible());
    QVERIFY(wizard.writtenSpec().isEmpty());
    const QString weights_error = wizard.weightsPage()->errorLabel()->text();
    QVERIFY2(weights_error.contains(u"no-such.pth"_qs), qPrintable(weights_error));
    QCOMPARE(QDir(empty).entryList({u"*.txt"_qs}, QDir::Files).size(), 0);
  }

  // The window opened without a spec: the start page in place of the views, the docks hidden
  // meanwhile; its buttons.
  void startPageButtons() {
    RecentItems().add(RecentItems::Kind::Run, u"/runs/earlier"_qs);
    MainWindow window;
    window.show();
    QVERIFY(window.problemsDock()->isVisible());
    window.showStartPage();
    QVERIFY(window.isStartPageShown());
    QVERIFY(!window.problemsDock()->isVisible());  // no spec, no problems
    QVERIFY(!window.recentDock()->isVisible());    // the page lists them
    StartPage* start = window.startPage();
    QVERIFY(start->isVisible());
    QCOMPARE(window.windowTitle(), u"Mask R-CNN Workbench"_qs);
    // The layout saved meanwhile is the user's: the docks count as shown.
    window.saveWindowState();
    QVERIFY(!window.problemsDock()->isVisible());
    {
      MainWindow again;
      again.show();
      QVERIFY(again.problemsDock()->isVisible() && again.recentDock()->isVisible());
    }
    // The recent run is listed.
    QVERIFY(!start->recentPanel()->findItems(u"earlier"_qs, Qt::MatchRecursive).isEmpty());

    // New Experiment from Data…: the wizard.
    start->button(StartPage::Action::NewExperiment)->click();
    auto* wizard = window.findChild<NewExperimentWizard*>();
    QVERIFY(wizard && wizard->isVisible());
    wizard->close();  // deletes itself
    QTRY_VERIFY(!window.findChild<NewExperimentWizard*>());
    QVERIFY(window.isStartPageShown());

    // Open Spec… and Open Run…: a file dialog each; cancelled, the start page stays.
    for (const auto action : {StartPage::Action::OpenSpec, StartPage::Action::OpenRun}) {
      bool saw_dialog = false;
      QTimer::singleShot(300, this, [&saw_dialog] {
        if (auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget())) {
          saw_dialog = true;
          dialog->reject();
        }
      });
      start->button(action)->click();
      QVERIFY(saw_dialog);
      QVERIFY(window.isStartPageShown());
    }

    // The embedded example: written into the user's data folder and opened in the editor.
    start->button(StartPage::Action::OpenExample)->click();
    QVERIFY(!window.isStartPageShown());
    QCOMPARE(window.currentView(), MainWindow::View::Experiments);
    const QString path = window.specEditor()->filePath();
    QVERIFY2(path.endsWith(u"example/specs/shapes_resnet18.txt"_qs), qPrintable(path));
    QVERIFY(path.startsWith(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)));
    QVERIFY(!window.specEditor()->hasErrors());
    QVERIFY(window.problemsDock()->isVisible());  // back with the spec
    QVERIFY(window.recentDock()->isVisible());
    window.specEditor()->textEdit()->document()->setModified(false);
  }

  // --help names the program on its first line.
  void helpBeginsWithTheUsage() {
    QProcess p;
    p.start(qEnvironmentVariable("MRCNN_BIN_DIR") + u"/mrcnn-workbench"_qs, {u"--help"_qs});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 0);
    const QString out = QString::fromUtf8(p.readAllStandardOutput());
    QCOMPARE(out.section(u'\n', 0, 0), u"Usage: mrcnn-workbench [options] [SPEC]"_qs);
    QVERIFY(out.contains(u"--new-experiment <DATA>"_qs));
  }

 private:
  QTemporaryDir settings_dir_;
};

QTEST_MAIN(NewExperimentTest)
#include "test_new_experiment.moc"

#include "ui/new_experiment/data_page.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QWizard>
#include <algorithm>
#include <initializer_list>
#include <thread>
#include <utility>
#include <vector>

namespace mrcnn::ui {
namespace {

struct FormatName {
  const char* id;
  const char* text;
};
// The importer's formats, as the user knows them.
constexpr FormatName kFormats[] = {
    {"labelme", QT_TRANSLATE_NOOP("DataPage", "LabelMe (JSON files beside their images)")},
    {"voc", QT_TRANSLATE_NOOP("DataPage", "VOC 2012 instance segmentation (SegmentationObject)")},
    {"cvat", QT_TRANSLATE_NOOP("DataPage", "CVAT for images 1.1 (XML)")},
    {"yolo", QT_TRANSLATE_NOOP("DataPage", "Ultralytics YOLO segmentation (data.yaml)")},
    {"coco", QT_TRANSLATE_NOOP("DataPage", "COCO instances (JSON)")},
};

QString formatText(const QString& id) {
  for (const FormatName& f : kFormats) {
    if (id == QLatin1String(f.id)) return DataPage::tr(f.text);
  }
  return id;
}

QWidget* row(QWidget* parent, QLineEdit* edit, std::initializer_list<QPushButton*> buttons) {
  auto* w = new QWidget(parent);
  auto* h = new QHBoxLayout(w);
  h->setContentsMargins(0, 0, 0, 0);
  h->addWidget(edit, 1);
  for (QPushButton* b : buttons)
    h->addWidget(b);
  return w;
}

}  // namespace

DataPage::DataPage(QWidget* parent)
    : QWizardPage(parent),
      input_(new QLineEdit(this)),
      detected_label_(new QLabel(this)),
      format_(new QComboBox(this)),
      split_(new QLineEdit(u"train=0.8,val=0.2"_qs, this)),
      split_error_(new QLabel(this)),
      seed_(new QSpinBox(this)),
      labels_(new QLineEdit(this)),
      copy_images_(new QCheckBox(tr("Copy the images into the experiment folder"), this)),
      output_(new QLineEdit(this)),
      error_(new QLabel(this)) {
  setTitle(tr("Your data"));
  setButtonText(QWizard::NextButton, tr("&Import >"));
  setSubTitle(
      tr("A folder or a file labelled in LabelMe, VOC, CVAT, YOLO-seg or COCO. It is "
         "imported into COCO files in the experiment folder; the originals are only "
         "read."));
  input_->setObjectName(u"input"_qs);
  input_->setPlaceholderText(tr("a folder, or an annotation file"));
  auto* folder = new QPushButton(tr("Folder…"), this);
  auto* file = new QPushButton(tr("File…"), this);
  connect(folder, &QPushButton::clicked, this, [this] { chooseInput(true); });
  connect(file, &QPushButton::clicked, this, [this] { chooseInput(false); });

  format_->setObjectName(u"format"_qs);
  format_->addItem(tr("As detected"), QString());
  for (const FormatName& f : kFormats)
    format_->addItem(tr(f.text), QString::fromLatin1(f.id));
  detected_label_->setObjectName(u"detected"_qs);
  detected_label_->setWordWrap(true);

  split_->setObjectName(u"split"_qs);
  split_->setToolTip(
      tr("Fractions by split name. A format's own splits (VOC's ImageSets, CVAT's "
         "subsets, YOLO's train/val, COCO files) are kept; only the other images "
         "are split. train=1 keeps everything for training."));
  split_error_->setStyleSheet(u"color: #c62828"_qs);
  split_error_->setWordWrap(true);
  split_error_->hide();
  seed_->setObjectName(u"seed"_qs);
  seed_->setRange(0, 1 << 30);
  seed_->setToolTip(tr("The same seed splits the same images the same way"));
  labels_->setObjectName(u"labels"_qs);
  labels_->setPlaceholderText(tr("optional: one label a line (LabelMe's labels.txt)"));
  auto* labels_button = new QPushButton(tr("Browse…"), this);
  connect(labels_button, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Labels file"), input_->text());
    if (!path.isEmpty()) labels_->setText(path);
  });
  output_->setObjectName(u"experimentFolder"_qs);
  output_->setPlaceholderText(tr("an empty or new folder"));
  auto* output_button = new QPushButton(tr("Browse…"), this);
  connect(output_button, &QPushButton::clicked, this, [this] {
    const QString path =
        QFileDialog::getExistingDirectory(this, tr("Experiment folder"), output_->text());
    if (!path.isEmpty()) setExperimentDir(path);
  });
  error_->setObjectName(u"error"_qs);
  error_->setStyleSheet(u"color: #c62828"_qs);
  error_->setWordWrap(true);
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->hide();

  auto* form = new QFormLayout;
  form->addRow(tr("&Data:"), row(this, input_, {folder, file}));
  form->addRow(QString(), detected_label_);
  form->addRow(tr("&Format:"), format_);
  form->addRow(tr("&Split:"), split_);
  form->addRow(QString(), split_error_);
  form->addRow(tr("S&eed:"), seed_);
  form->addRow(tr("&Labels:"), row(this, labels_, {labels_button}));
  form->addRow(QString(), copy_images_);
  form->addRow(tr("E&xperiment folder:"), row(this, output_, {output_button}));
  auto* column = new QVBoxLayout(this);
  column->addLayout(form);
  auto* layout_note = new QLabel(
      tr("The experiment folder gets <tt>dataset/</tt> (the COCO files and the import report), "
         "the spec, and <tt>runs/</tt> once it trains."),
      this);
  layout_note->setWordWrap(true);
  column->addWidget(layout_note);
  column->addStretch(1);
  column->addWidget(error_);

  connect(input_, &QLineEdit::textChanged, this, &DataPage::detect);
  connect(format_, &QComboBox::currentIndexChanged, this, &DataPage::completeChanged);
  connect(split_, &QLineEdit::textChanged, this, &DataPage::checkSplit);
  connect(output_, &QLineEdit::textEdited, this, [this] { output_edited_ = true; });
  connect(output_, &QLineEdit::textChanged, this, &DataPage::completeChanged);
  detect();
}

void DataPage::chooseInput(bool folder) {
  const QString start = input_->text().isEmpty() ? QDir::homePath() : input_->text();
  const QString path = folder
                           ? QFileDialog::getExistingDirectory(this, tr("The data's folder"), start)
                           : QFileDialog::getOpenFileName(
                                 this, tr("The data's annotation file"), start,
                                 tr("Annotations (*.json *.xml *.yaml *.yml);;All files (*)"));
  if (!path.isEmpty()) setInput(path);
}

void DataPage::setInput(const QString& path) {
  input_->setText(path);
}

void DataPage::setExperimentDir(const QString& path) {
  output_edited_ = true;
  output_->setText(path);
}

void DataPage::detect() {
  const QString path = input_->text().trimmed();
  detected_.clear();
  error_->hide();
  if (path.isEmpty()) {
    detected_label_->setText(tr("Choose a folder or a file."));
  } else if (!QFileInfo::exists(path)) {
    detected_label_->setText(tr("%1 does not exist.").arg(path));
  } else {
    if (const auto found = dataset::import::detectFormat(path.toStdString()))
      detected_ = QString::fromStdString(*found);
    detected_label_->setText(
        detected_.isEmpty() ? tr("Format not recognised: choose it below.")
                            : tr("Detected: <b>%1</b>").arg(formatText(detected_).toHtmlEscaped()));
    // The experiment folder follows the data until the user names one.
    if (!output_edited_) {
      const QFileInfo info(path);
      const QString name = info.isDir() ? info.fileName() : info.completeBaseName();
      output_->setText(info.absoluteDir().filePath(name + u"_experiment"_qs));
    }
  }
  emit completeChanged();
}

void DataPage::checkSplit() {
  std::vector<std::pair<std::string, double>> parsed;
  const auto error = dataset::import::parseSplit(split_->text().trimmed().toStdString(), &parsed);
  split_ok_ = !error;
  split_error_->setText(error ? QString::fromStdString(*error) : QString());
  split_error_->setVisible(bool(error));
  emit completeChanged();
}

QString DataPage::chosenFormat() const {
  const QString chosen = format_->currentData().toString();
  return chosen.isEmpty() ? detected_ : chosen;
}

QString DataPage::experimentDir() const {
  return QDir::cleanPath(output_->text().trimmed());
}

dataset::import::ImportOptions DataPage::importOptions() const {
  dataset::import::ImportOptions o;
  o.format = format_->currentData().toString().toStdString();  // "": the importer detects
  o.input = input_->text().trimmed().toStdString();
  o.output_dir = QDir(experimentDir()).filePath(u"dataset"_qs).toStdString();
  o.labels = labels_->text().trimmed().toStdString();
  dataset::import::parseSplit(split_->text().trimmed().toStdString(), &o.split);
  o.seed = static_cast<uint64_t>(seed_->value());
  o.copy_images = copy_images_->isChecked();
  // One core is left to the window.
  o.threads = std::max(2u, std::thread::hardware_concurrency()) - 1;
  return o;
}

bool DataPage::isComplete() const {
  return QFileInfo::exists(input_->text().trimmed()) && !chosenFormat().isEmpty() && split_ok_ &&
         !output_->text().trimmed().isEmpty();
}

void DataPage::showError(const QString& text) {
  error_->setText(text);
  error_->setVisible(!text.isEmpty());
}

bool DataPage::validatePage() {
  const QDir dir(experimentDir());
  const QString labels = labels_->text().trimmed();
  if (!labels.isEmpty() && !QFileInfo(labels).isFile()) {
    showError(tr("The labels file %1 does not exist.").arg(labels));
    return false;
  }
  if (dir.exists()) {
    // An existing experiment folder must be empty (the import refuses a non-empty output), or
    // hold only what this wizard imported a moment ago.
    QStringList entries = dir.entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden);
    if (!own_import_.isEmpty() && QDir::cleanPath(own_import_) == dir.filePath(u"dataset"_qs))
      entries.removeAll(u"dataset"_qs);
    if (!entries.isEmpty()) {
      showError(tr("The experiment folder %1 is not empty (it holds %2): choose an empty or a "
                   "new folder.")
                    .arg(dir.path(), entries.mid(0, 3).join(u", "_qs) +
                                         (entries.size() > 3 ? u", …"_qs : QString())));
      return false;
    }
  }
  showError({});
  return true;
}

}  // namespace mrcnn::ui

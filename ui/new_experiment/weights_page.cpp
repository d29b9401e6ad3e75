#include "ui/new_experiment/weights_page.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include "ui/new_experiment/data_page.h"
#include "ui/new_experiment/report_page.h"
#include "weights/catalogue.h"

namespace mrcnn::ui {
namespace {

using Start = ExperimentChoices::Start;

// The ResNet depths maskrcnn_config.nlayers takes.
constexpr int kDepths[] = {10, 18, 34, 50, 101};

// The catalogue's entries of a kind; unsupported ones listed disabled, their reason as tip.
void fillNames(QComboBox* box, weights::WeightsKind kind) {
  auto* model = qobject_cast<QStandardItemModel*>(box->model());
  for (const weights::CatalogueEntry& e : weights::builtinCatalogue()) {
    if (e.kind != kind) continue;
    const QString name = QString::fromStdString(e.name);
    const QString text =
        kind == weights::WeightsKind::kMaskRCNN
            ? QObject::tr("%1 (ResNet-%2 FPN, COCO)").arg(name).arg(e.depth)
            : QObject::tr("%1 (ResNet-%2, %3)")
                  .arg(name)
                  .arg(e.depth)
                  .arg(QString::fromStdString(e.torchvision_weights).section(u'.', 1));
    box->addItem(text, name);
    const int row = box->count() - 1;
    box->setItemData(row, e.depth, Qt::UserRole + 1);
    if (!e.supported) {
      if (QStandardItem* item = model ? model->item(row) : nullptr) item->setEnabled(false);
      box->setItemData(row, QString::fromStdString(e.reason), Qt::ToolTipRole);
    }
  }
}

QString safeName(QString name) {
  name.replace(QRegularExpression(u"[^A-Za-z0-9_.-]+"_qs), u"_"_qs);
  return name.isEmpty() ? u"experiment"_qs : name;
}

}  // namespace

WeightsPage::WeightsPage(DataPage* data_page, ReportPage* report, QWidget* parent)
    : QWizardPage(parent),
      data_page_(data_page),
      report_(report),
      start_(new QButtonGroup(this)),
      imagenet_(new QComboBox(this)),
      coco_(new QComboBox(this)),
      file_(new QLineEdit(this)),
      depth_(new QComboBox(this)),
      epochs_(new QSpinBox(this)),
      batch_(new QSpinBox(this)),
      schedule_(new QLabel(this)),
      add_anchor_(new QCheckBox(this)),
      name_(new QLineEdit(this)),
      path_(new QLabel(this)),
      error_(new QLabel(this)) {
  setTitle(tr("Start"));
  setSubTitle(
      tr("Where the weights start, the backbone, and how long to train. Weights by name "
         "are downloaded once into your cache when the run starts."));
  setFinalPage(true);

  auto* scratch = new QRadioButton(tr("From &scratch"), this);
  auto* imagenet = new QRadioButton(tr("&ImageNet backbone:"), this);
  auto* coco = new QRadioButton(tr("&COCO Mask R-CNN:"), this);
  auto* file = new QRadioButton(tr("Weights &file:"), this);
  start_->addButton(scratch, static_cast<int>(Start::Scratch));
  start_->addButton(imagenet, static_cast<int>(Start::ImageNet));
  start_->addButton(coco, static_cast<int>(Start::Coco));
  start_->addButton(file, static_cast<int>(Start::File));
  imagenet->setChecked(true);  // the usual start on a few hundred images
  imagenet_->setObjectName(u"imagenetNames"_qs);
  coco_->setObjectName(u"cocoNames"_qs);
  fillNames(imagenet_, weights::WeightsKind::kImageNetResNet);
  fillNames(coco_, weights::WeightsKind::kMaskRCNN);
  if (const int i = imagenet_->findData(u"torchvision:resnet50"_qs); i >= 0)
    imagenet_->setCurrentIndex(i);
  file_->setObjectName(u"weightsFile"_qs);
  file_->setPlaceholderText(tr("a checkpoint of ours, or a torchvision state_dict (.pt, .pth)"));
  auto* browse = new QPushButton(tr("Browse…"), this);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Weights file"), file_->text(),
                                                      tr("Weights (*.pt *.pth);;All files (*)"));
    if (!path.isEmpty()) setWeightsFile(path);
  });
  auto* file_row = new QHBoxLayout;
  file_row->addWidget(file_, 1);
  file_row->addWidget(browse);

  auto* starts = new QGridLayout;
  starts->addWidget(scratch, 0, 0);
  starts->addWidget(imagenet, 1, 0);
  starts->addWidget(imagenet_, 1, 1);
  starts->addWidget(coco, 2, 0);
  starts->addWidget(coco_, 2, 1);
  starts->addWidget(file, 3, 0);
  starts->addLayout(file_row, 3, 1);
  starts->setColumnStretch(1, 1);

  depth_->setObjectName(u"depth"_qs);
  for (int d : kDepths)
    depth_->addItem(tr("ResNet-%1").arg(d), d);
  depth_->setCurrentIndex(depth_->findData(50));
  epochs_->setObjectName(u"epochs"_qs);
  for (QWidget* w : {static_cast<QWidget*>(depth_), static_cast<QWidget*>(epochs_),
                     static_cast<QWidget*>(batch_)})
    w->setMaximumWidth(200);
  epochs_->setRange(1, 10000);
  epochs_->setValue(24);
  epochs_->setToolTip(
      tr("Passes over the training images (detectron2's 2x schedule is about 24 "
         "epochs of COCO)"));
  batch_->setObjectName(u"batchSize"_qs);
  batch_->setRange(1, 64);
  batch_->setValue(2);
  batch_->setToolTip(tr("Images a step; the learning rate follows it (0.02 for 16)"));
  schedule_->setWordWrap(true);
  add_anchor_->setObjectName(u"addAnchor"_qs);
  name_->setObjectName(u"specName"_qs);
  path_->setWordWrap(true);
  path_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->setObjectName(u"error"_qs);
  error_->setStyleSheet(u"color: #c62828"_qs);
  error_->setWordWrap(true);
  error_->setTextFormat(Qt::PlainText);
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->hide();

  auto* form = new QFormLayout;
  form->addRow(tr("&Backbone:"), depth_);
  form->addRow(tr("&Epochs:"), epochs_);
  form->addRow(tr("Images a s&tep:"), batch_);
  form->addRow(QString(), schedule_);
  form->addRow(QString(), add_anchor_);
  form->addRow(tr("Spec &name:"), name_);
  form->addRow(QString(), path_);
  auto* column = new QVBoxLayout(this);
  column->addLayout(starts);
  column->addSpacing(8);
  column->addLayout(form);
  column->addStretch(1);
  column->addWidget(error_);

  connect(start_, &QButtonGroup::idClicked, this, &WeightsPage::refresh);
  for (QComboBox* box : {imagenet_, coco_, depth_})
    connect(box, &QComboBox::currentIndexChanged, this, &WeightsPage::refresh);
  for (QSpinBox* box : {epochs_, batch_})
    connect(box, &QSpinBox::valueChanged, this, &WeightsPage::refresh);
  connect(file_, &QLineEdit::textChanged, this, &WeightsPage::refresh);
  connect(name_, &QLineEdit::textChanged, this, &WeightsPage::refresh);
  connect(add_anchor_, &QCheckBox::toggled, this, &WeightsPage::refresh);
}

QRadioButton* WeightsPage::startButton(Start start) const {
  return qobject_cast<QRadioButton*>(start_->button(static_cast<int>(start)));
}

void WeightsPage::setStart(Start start) {
  if (QRadioButton* b = startButton(start)) b->setChecked(true);
  refresh();
}

bool WeightsPage::setWeightsName(const QString& name) {
  for (QComboBox* box : {imagenet_, coco_}) {
    if (const int i = box->findData(name); i >= 0) {
      box->setCurrentIndex(i);
      setStart(box == coco_ ? Start::Coco : Start::ImageNet);
      return true;
    }
  }
  return false;
}

void WeightsPage::setWeightsFile(const QString& path) {
  file_->setText(path);
  setStart(Start::File);
}

void WeightsPage::initializePage() {
  if (name_->text().isEmpty()) {
    const QFileInfo input(data_page_->input()->text().trimmed());
    name_->setText(safeName(input.isDir() ? input.fileName() : input.completeBaseName()));
  }
  error_->hide();
  refresh();
}

QString WeightsPage::specPath() const {
  return QDir(data_page_->experimentDir()).filePath(safeName(name_->text().trimmed()) + u".txt"_qs);
}

ExperimentChoices WeightsPage::choices() const {
  ExperimentChoices c;
  c.start = static_cast<Start>(start_->checkedId());
  switch (c.start) {
    case Start::ImageNet:
      c.weights = imagenet_->currentData().toString().toStdString();
      c.depth = imagenet_->currentData(Qt::UserRole + 1).toInt();
      break;
    case Start::Coco:
      c.weights = coco_->currentData().toString().toStdString();
      c.depth = coco_->currentData(Qt::UserRole + 1).toInt();
      break;
    case Start::File:
      c.weights = file_->text().trimmed().toStdString();
      c.depth = depth_->currentData().toInt();
      break;
    case Start::Scratch:
      c.depth = depth_->currentData().toInt();
      break;
  }
  c.epochs = epochs_->value();
  c.batch_size = batch_->value();
  c.add_suggested_anchor = add_anchor_->isChecked();
  c.spec_path = specPath().toStdString();
  return c;
}

void WeightsPage::refresh() {
  const auto start = static_cast<Start>(start_->checkedId());
  imagenet_->setEnabled(start == Start::ImageNet);
  coco_->setEnabled(start == Start::Coco);
  file_->setEnabled(start == Start::File);
  // Named weights fit one depth (the catalogue says which): the backbone follows them.
  const bool named = start == Start::ImageNet || start == Start::Coco;
  if (named) {
    const QComboBox* names = start == Start::Coco ? coco_ : imagenet_;
    const QSignalBlocker block(depth_);
    depth_->setCurrentIndex(depth_->findData(names->currentData(Qt::UserRole + 1)));
  }
  depth_->setEnabled(!named);
  depth_->setToolTip(named ? tr("The depth the chosen weights were trained with") : QString());

  const auto imported = report_->data();
  const int64_t train_images = imported ? imported->train_images : 0;
  const Schedule s = scheduleFor(train_images, epochs_->value(), batch_->value());
  schedule_->setText(tr("%1 training images: %2 step(s) an epoch, %3 steps in all, evaluated "
                        "and saved every %4 steps; learning rate %5.")
                         .arg(train_images)
                         .arg(s.steps_per_epoch)
                         .arg(s.total_steps)
                         .arg(s.steps_per_eval)
                         .arg(s.learning_rate));
  if (imported && imported->suggested_pair) {
    add_anchor_->setText(tr("Add the anchor aspect pair (%1, %2) the dataset check suggests")
                             .arg(imported->suggested_pair->first, 0, 'f', 2)
                             .arg(imported->suggested_pair->second, 0, 'f', 2));
    add_anchor_->setEnabled(start != Start::Coco);
    add_anchor_->setToolTip(start == Start::Coco
                                ? tr("COCO Mask R-CNN's RPN head was trained for torchvision's "
                                     "three anchors")
                                : QString());
  } else {
    add_anchor_->setText(tr("No anchor aspect pair to add: the dataset check suggests none"));
    add_anchor_->setEnabled(false);
  }
  path_->setText(
      tr("Written to %1; runs go to %2.")
          .arg(QDir::toNativeSeparators(specPath()),
               QDir::toNativeSeparators(QDir(data_page_->experimentDir()).filePath(u"runs"_qs))));
  emit completeChanged();
}

bool WeightsPage::isComplete() const {
  if (!report_->data() || name_->text().trimmed().isEmpty()) return false;
  const auto start = static_cast<Start>(start_->checkedId());
  if (start == Start::File) return !file_->text().trimmed().isEmpty();
  if (start == Start::ImageNet) return imagenet_->currentIndex() >= 0;
  if (start == Start::Coco) return coco_->currentIndex() >= 0;
  return true;
}

bool WeightsPage::validatePage() {
  const auto show = [this](const QString& text) {
    error_->setText(text);
    error_->setVisible(!text.isEmpty());
    return text.isEmpty();
  };
  const auto imported = report_->data();
  if (!imported) return show(tr("Nothing imported yet: go Back to the import."));
  const ExperimentChoices c = choices();
  if (c.start == Start::File && !QFileInfo(QString::fromStdString(c.weights)).isFile())
    return show(tr("The weights file %1 does not exist.").arg(QString::fromStdString(c.weights)));
  if (c.start != Start::File && c.start != Start::Scratch) {
    const weights::CatalogueEntry* e = weights::findEntry(weights::builtinCatalogue(), c.weights);
    if (!e || !e->supported)
      return show(
          e ? QString::fromStdString(e->reason)
            : tr("%1 is not in the weights catalogue").arg(QString::fromStdString(c.weights)));
  }
  if (QFileInfo::exists(specPath()))
    return show(tr("%1 exists already: choose another spec name.").arg(specPath()));
  const std::vector<std::string> errors = writeExperimentSpec(*imported, c);
  if (!errors.empty()) {
    QStringList lines;
    for (const std::string& e : errors)
      lines << QString::fromStdString(e);
    return show(tr("The spec was not written:\n%1").arg(lines.join(u'\n')));
  }
  written_ = specPath();
  return show({});
}

}  // namespace mrcnn::ui

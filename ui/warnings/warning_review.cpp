#include "ui/warnings/warning_review.h"

#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMap>
#include <QPushButton>
#include <QSplitter>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "dataset/coco/coco.h"
#include "ui/common/background.h"
#include "ui/common/coco_overlay.h"
#include "ui/common/image_file.h"
#include "ui/common/image_view.h"
#include "ui/common/layer_controls.h"

namespace mrcnn::ui {

namespace {

constexpr int kEntryRole = Qt::UserRole + 1;

struct LoadedReview {
  WarningReport report;
  QString error;  // the report cannot be read
  std::shared_ptr<const dataset::CocoDataset> coco;
  std::shared_ptr<const RawIndex> raw;
  QString annotations_error;  // the review still works, without images
  QSet<QString> reviewed;
};

struct LoadedEntryImage {
  QImage image;
  std::vector<OverlayInstance> instances;
  QString note;
};

}  // namespace

WarningReview::WarningReview(QWidget* parent) : QWidget(parent) {
  pool_.setMaxThreadCount(1);
  tree_ = new QTreeWidget(this);
  tree_->setColumnCount(2);
  tree_->setHeaderLabels({tr("Warning"), tr("Fix")});
  tree_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  tree_->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
  tree_->header()->setStretchLastSection(false);
  tree_->setUniformRowHeights(true);
  connect(tree_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
    const QVariant v = item ? item->data(0, kEntryRole) : QVariant();
    if (v.isValid()) showEntry(v.toInt());
    updateButtons();
  });
  connect(tree_, &QTreeWidget::itemChanged, this, [this](QTreeWidgetItem* item, int column) {
    const QVariant v = item->data(0, kEntryRole);
    if (column != 0 || !v.isValid()) return;
    const bool checked = item->checkState(0) == Qt::Checked;
    if (checked != isReviewed(v.toInt())) setReviewed(v.toInt(), checked);
  });

  view_ = new ImageView(this);
  view_->setShowImageBounds(true);
  layers_ = new LayerControls(this);
  connect(layers_, &LayerControls::layersChanged, view_, &ImageView::setLayers);
  // The other annotations faint, as context: the highlighted one carries the only label
  // and is drawn whatever the layers.
  OverlayLayers layers;
  layers.labels = false;
  layers.mask_opacity = 0.15;
  layers_->setLayers(layers);
  details_ = new QLabel(this);
  details_->setWordWrap(true);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* open = new QPushButton(tr("&Open report…"), this);
  connect(open, &QPushButton::clicked, this, &WarningReview::chooseReport);
  reviewed_button_ = new QPushButton(tr("Mark &reviewed"), this);
  reviewed_button_->setCheckable(true);
  reviewed_button_->setShortcut(QKeySequence(Qt::Key_Space));
  connect(reviewed_button_, &QPushButton::clicked, this,
          [this](bool on) { setReviewed(selected_, on); });
  drop_button_ = new QPushButton(tr("&Drop annotation"), this);
  drop_button_->setCheckable(true);
  connect(drop_button_, &QPushButton::clicked, this,
          [this](bool on) { setFix(selected_, on ? Fix::Drop : Fix::None); });
  clip_button_ = new QPushButton(tr("&Clip box to image"), this);
  clip_button_->setCheckable(true);
  connect(clip_button_, &QPushButton::clicked, this,
          [this](bool on) { setFix(selected_, on ? Fix::Clip : Fix::None); });
  export_button_ = new QPushButton(tr("&Export corrected copy…"), this);
  connect(export_button_, &QPushButton::clicked, this, &WarningReview::chooseExport);

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(open);
  buttons->addSpacing(12);
  buttons->addWidget(reviewed_button_);
  buttons->addWidget(drop_button_);
  buttons->addWidget(clip_button_);
  buttons->addStretch(1);
  buttons->addWidget(export_button_);

  auto* right = new QWidget(this);
  auto* right_layout = new QVBoxLayout(right);
  right_layout->setContentsMargins(0, 0, 0, 0);
  right_layout->addWidget(layers_);
  right_layout->addWidget(view_, 1);
  right_layout->addWidget(details_);
  auto* splitter = new QSplitter(this);
  splitter->addWidget(tree_);
  splitter->addWidget(right);
  splitter->setStretchFactor(0, 2);
  splitter->setStretchFactor(1, 3);

  status_ = new QLabel(
      tr("Open a dataset_convert report or TAO warnings file with its annotation file."), this);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(buttons);
  layout->addWidget(splitter, 1);
  layout->addWidget(status_);
  updateButtons();
}

WarningReview::~WarningReview() {
  waitForBackground(pool_);
}

QString WarningReview::statusText() const {
  return status_->text();
}

void WarningReview::chooseReport() {
  const QString report = QFileDialog::getOpenFileName(
      this, tr("Warnings or report"), QString(),
      tr("dataset_convert output (*_warnings.json *_report.json);;JSON (*.json)"));
  if (report.isEmpty()) return;
  const QString json =
      QFileDialog::getOpenFileName(this, tr("The converted annotation file"),
                                   QFileInfo(report).absolutePath(), tr("COCO json (*.json)"));
  if (json.isEmpty()) return;
  const QString dir =
      QFileDialog::getExistingDirectory(this, tr("Image folder"), QFileInfo(json).absolutePath());
  if (!dir.isEmpty()) openReport(report, json, dir);
}

void WarningReview::openReport(const QString& warningsOrReportJson, const QString& annotationsJson,
                               const QString& imageDir) {
  const uint64_t generation = ++load_generation_;
  status_->setText(tr("Loading %1…").arg(warningsOrReportJson));
  runInBackground(
      pool_, this,
      [warningsOrReportJson, annotationsJson] {
        LoadedReview out;
        try {
          out.report = readWarningReport(warningsOrReportJson);
          out.reviewed = readReviewed(warningsOrReportJson);
        } catch (const std::exception& e) {
          out.error = QString::fromUtf8(e.what());
          return out;
        }
        try {
          dataset::CocoLoadOptions options;
          options.threads = 1;
          out.coco = std::make_shared<const dataset::CocoDataset>(
              dataset::loadCoco(annotationsJson.toStdString(), options));
          // The raw file too: the reader skips some annotations at fault (negative sizes,
          // unknown categories), and those are the ones to show.
          QFile file(annotationsJson);
          if (file.open(QIODevice::ReadOnly)) {
            const QByteArray bytes = file.readAll();
            out.raw = std::make_shared<const RawIndex>(indexAnnotations(
                std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())),
                annotationsJson.toStdString()));
          }
        } catch (const std::exception& e) {
          out.annotations_error = QString::fromUtf8(e.what());
        }
        return out;
      },
      [this, generation, warningsOrReportJson, annotationsJson, imageDir](LoadedReview loaded) {
        if (generation != load_generation_) return;
        if (!loaded.error.isEmpty()) {
          status_->setText(tr("Cannot read the warnings: %1").arg(loaded.error));
          emit reportLoaded(false, loaded.error);
          return;
        }
        report_ = std::move(loaded.report);
        coco_ = std::move(loaded.coco);
        raw_ = std::move(loaded.raw);
        reviewed_ = std::move(loaded.reviewed);
        annotations_ = annotationsJson;
        image_dir_ = imageDir;
        corrections_ = {};
        selected_ = -1;
        view_->clear();
        details_->clear();
        fillTree();
        annotations_error_ = loaded.annotations_error;
        updateStatus();
        updateButtons();
        emit reportLoaded(true, loaded.annotations_error);
      });
}

void WarningReview::updateStatus() {
  int done = 0;
  for (const WarningEntry& e : report_.entries)
    done += reviewed_.contains(e.key());
  QString text = tr("%1 (%2): %n warning(s)", nullptr, static_cast<int>(report_.entries.size()))
                     .arg(QFileInfo(report_.path).fileName(),
                          report_.tao_format ? tr("TAO warnings") : tr("dataset_convert report")) +
                 tr(", %1 reviewed").arg(done);
  if (!corrections_.empty())
    text += tr("; %n to drop", nullptr, static_cast<int>(corrections_.drop.size())) +
            tr(", %n to clip", nullptr, static_cast<int>(corrections_.clip.size()));
  if (!annotations_error_.isEmpty()) text += tr("; cannot show images: %1").arg(annotations_error_);
  status_->setText(text);
}

void WarningReview::fillTree() {
  const QSignalBlocker block(tree_);
  tree_->clear();
  items_.assign(report_.entries.size(), nullptr);
  // Kind, then image, each in order of first appearance.
  QMap<QString, QTreeWidgetItem*> kinds;
  QMap<QString, QTreeWidgetItem*> images;
  for (size_t i = 0; i < report_.entries.size(); ++i) {
    const WarningEntry& e = report_.entries[i];
    QTreeWidgetItem*& kind = kinds[e.kind];
    if (!kind) {
      kind = new QTreeWidgetItem(tree_);
      kind->setFirstColumnSpanned(true);
      QFont bold = kind->font(0);
      bold.setBold(true);
      kind->setFont(0, bold);
    }
    QString image_label;
    if (e.image_id) {
      image_label = tr("image %1").arg(*e.image_id);
      if (coco_) {
        if (const auto index = coco_->imageIndex(*e.image_id)) {
          const auto& name = coco_->images()[*index].file_name;
          image_label =
              QStringLiteral("%1 (id %2)")
                  .arg(QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size())))
                  .arg(*e.image_id);
        }
      }
    } else {
      image_label = e.file.isEmpty() ? tr("no image") : e.file;
    }
    QTreeWidgetItem*& image = images[e.kind + '\n' + image_label];
    if (!image) image = new QTreeWidgetItem(kind, {image_label});
    auto* item = new QTreeWidgetItem(image);
    item->setData(0, kEntryRole, static_cast<int>(i));
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
    items_[i] = item;
    updateItem(static_cast<int>(i));
  }
  for (auto it = kinds.begin(); it != kinds.end(); ++it) {
    int n = 0;
    for (int c = 0; c < it.value()->childCount(); ++c) {
      QTreeWidgetItem* image = it.value()->child(c);
      image->setText(0, QStringLiteral("%1 — %2").arg(image->text(0)).arg(image->childCount()));
      n += image->childCount();
    }
    it.value()->setText(0, QStringLiteral("%1 — %2").arg(kindTitle(it.key())).arg(n));
  }
  tree_->expandAll();
}

void WarningReview::updateItem(int index) {
  QTreeWidgetItem* item = items_[static_cast<size_t>(index)];
  const WarningEntry& e = report_.entries[static_cast<size_t>(index)];
  const QSignalBlocker block(tree_);
  item->setText(0, e.message.isEmpty() ? e.key() : e.message);
  item->setToolTip(0, e.message);
  item->setCheckState(0, isReviewed(index) ? Qt::Checked : Qt::Unchecked);
  const Fix f = fix(index);
  item->setText(1, f == Fix::Drop ? tr("drop") : f == Fix::Clip ? tr("clip") : QString());
}

bool WarningReview::isReviewed(int index) const {
  if (index < 0 || index >= static_cast<int>(report_.entries.size())) return false;
  return reviewed_.contains(report_.entries[static_cast<size_t>(index)].key());
}

void WarningReview::setReviewed(int index, bool reviewed) {
  if (index < 0 || index >= static_cast<int>(report_.entries.size())) return;
  const QString key = report_.entries[static_cast<size_t>(index)].key();
  if (reviewed)
    reviewed_.insert(key);
  else
    reviewed_.remove(key);
  updateStatus();
  try {
    writeReviewed(report_.path, reviewed_);
  } catch (const std::exception& e) {
    status_->setText(tr("Cannot save the review marks: %1").arg(QString::fromUtf8(e.what())));
  }
  updateItem(index);
  updateButtons();
}

WarningReview::Fix WarningReview::fix(int index) const {
  if (index < 0 || index >= static_cast<int>(report_.entries.size())) return Fix::None;
  const auto& id = report_.entries[static_cast<size_t>(index)].annotation_id;
  if (!id) return Fix::None;
  if (corrections_.drop.contains(*id)) return Fix::Drop;
  if (corrections_.clip.contains(*id)) return Fix::Clip;
  return Fix::None;
}

void WarningReview::setFix(int index, Fix fix) {
  if (index < 0 || index >= static_cast<int>(report_.entries.size())) return;
  const auto& id = report_.entries[static_cast<size_t>(index)].annotation_id;
  if (!id) return;
  corrections_.drop.erase(*id);
  corrections_.clip.erase(*id);
  if (fix == Fix::Drop) corrections_.drop.insert(*id);
  if (fix == Fix::Clip) corrections_.clip.insert(*id);
  // Every entry about the same annotation shows the same fix.
  for (size_t i = 0; i < report_.entries.size(); ++i)
    if (report_.entries[i].annotation_id == id) updateItem(static_cast<int>(i));
  updateStatus();
  updateButtons();
}

void WarningReview::updateButtons() {
  const bool has = selected_ >= 0;
  const bool annotation = has && report_.entries[static_cast<size_t>(selected_)].annotation_id;
  reviewed_button_->setEnabled(has);
  reviewed_button_->setChecked(isReviewed(selected_));
  drop_button_->setEnabled(annotation);
  drop_button_->setChecked(fix(selected_) == Fix::Drop);
  clip_button_->setEnabled(annotation);
  clip_button_->setChecked(fix(selected_) == Fix::Clip);
  export_button_->setEnabled(!corrections_.empty() && !annotations_.isEmpty());
  export_button_->setToolTip(
      tr("%n annotation(s) to drop", nullptr, static_cast<int>(corrections_.drop.size())) +
      tr(", %n box(es) to clip", nullptr, static_cast<int>(corrections_.clip.size())));
}

bool WarningReview::selectEntry(int index) {
  if (index < 0 || index >= static_cast<int>(items_.size())) return false;
  tree_->setCurrentItem(items_[static_cast<size_t>(index)]);
  if (selected_ != index) showEntry(index);
  return true;
}

void WarningReview::showEntry(int index) {
  selected_ = index;
  const WarningEntry entry = report_.entries[static_cast<size_t>(index)];
  details_->setText(
      QStringLiteral("<b>%1</b> — %2%3")
          .arg(kindTitle(entry.kind).toHtmlEscaped(), entry.message.toHtmlEscaped(),
               entry.annotation_id ? tr(" (annotation %1)").arg(*entry.annotation_id) : QString()));
  const uint64_t generation = ++image_generation_;
  const auto coco = coco_;
  const auto raw = raw_;
  const QString image_dir = image_dir_;
  runInBackground(
      pool_, this,
      [coco, raw, image_dir, entry] {
        LoadedEntryImage out;
        std::optional<uint32_t> image_index;
        if (coco && entry.image_id) image_index = coco->imageIndex(*entry.image_id);
        if (!image_index) {
          out.note =
              entry.image_id
                  ? QObject::tr("image %1 is not in the annotation file").arg(*entry.image_id)
                  : QObject::tr("no image to show");
          return out;
        }
        const dataset::CocoImage& image = coco->images()[*image_index];
        ImageFile file = readImageOrCanvas(
            imagePath(image_dir, image),
            QSize(static_cast<int>(image.width), static_cast<int>(image.height)));
        out.image = std::move(file.image);
        if (!file.problem.isEmpty())
          out.note = QObject::tr("the image cannot be shown: %1").arg(file.problem);
        const int64_t highlight = entry.annotation_id.value_or(-1);
        out.instances = groundTruthInstances(*coco, *image_index, highlight);
        bool found = highlight < 0;
        for (const OverlayInstance& i : out.instances)
          found = found || i.highlight;
        if (!found && raw) {
          // Skipped by the reader: its box from the file as it stands.
          const auto it = raw->annotations.find(highlight);
          if (it != raw->annotations.end() && it->second.bbox) {
            const auto& b = *it->second.bbox;
            OverlayInstance instance;
            instance.id = highlight;
            instance.box = QRectF(b[0], b[1], b[2], b[3]);
            instance.highlight = true;
            instance.colour = highlightColour();
            instance.label = QObject::tr("annotation %1 (not loaded)").arg(highlight);
            out.instances.push_back(std::move(instance));
          } else {
            out.note = QObject::tr("annotation %1 has no box in the file").arg(highlight);
          }
        }
        return out;
      },
      [this, generation, index, entry](LoadedEntryImage loaded) {
        if (generation != image_generation_) return;
        if (loaded.image.isNull()) {
          view_->clear();
        } else {
          view_->setImage(loaded.image);
          view_->setInstances(std::move(loaded.instances));
        }
        QString caption = kindTitle(entry.kind);
        if (entry.image_id) caption += tr(" — image %1").arg(*entry.image_id);
        if (!loaded.note.isEmpty()) caption += QStringLiteral(" — ") + loaded.note;
        view_->setCaption(caption);
        emit entryShown(index);
      });
  updateButtons();
}

void WarningReview::chooseExport() {
  if (annotations_.isEmpty()) return;
  const QFileInfo in(annotations_);
  const QString suggestion =
      in.absoluteDir().filePath(in.completeBaseName() + QStringLiteral("_corrected.json"));
  const QString out = QFileDialog::getSaveFileName(this, tr("Corrected copy"), suggestion,
                                                   tr("COCO json (*.json)"));
  if (!out.isEmpty()) exportCorrected(out);
}

bool WarningReview::exportCorrected(const QString& output, QString* message) {
  try {
    const CorrectionSummary s = exportCorrectedCopy(annotations_, output, corrections_);
    QString text =
        tr("Wrote %1: %n annotation(s) dropped", nullptr, static_cast<int>(s.dropped.size()))
            .arg(QDir::toNativeSeparators(output)) +
        tr(", %n box(es) clipped", nullptr, static_cast<int>(s.clipped.size()));
    if (!s.already_inside.empty())
      text +=
          tr(", %n already inside their image", nullptr, static_cast<int>(s.already_inside.size()));
    if (!s.empty_after_clip.empty())
      text += tr("; %n box(es) empty once clipped (drop them instead)", nullptr,
                 static_cast<int>(s.empty_after_clip.size()));
    if (!s.not_found.empty())
      text += tr("; %n id(s) not found or without a usable box", nullptr,
                 static_cast<int>(s.not_found.size()));
    status_->setText(text);
    if (message) *message = text;
    return true;
  } catch (const std::exception& e) {
    const QString text = tr("Cannot export: %1").arg(QString::fromUtf8(e.what()));
    status_->setText(text);
    if (message) *message = text;
    return false;
  }
}

}  // namespace mrcnn::ui

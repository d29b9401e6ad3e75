#include "ui/new_experiment/check_page.h"

#include <QComboBox>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QVBoxLayout>

#include "ui/dataset_browser/dataset_stats_view.h"
#include "ui/new_experiment/report_page.h"

namespace mrcnn::ui {

CheckPage::CheckPage(ReportPage* report, QWidget* parent)
    : QWizardPage(parent),
      report_(report),
      set_(new QComboBox(this)),
      suggestion_(new QLabel(this)),
      stats_(new DatasetStatsView(this)) {
  setTitle(tr("Dataset check"));
  setSubTitle(
      tr("The imported files as training will see them, with the anchors and the input "
         "size the spec will have."));
  set_->setObjectName(u"set"_qs);
  suggestion_->setObjectName(u"suggestion"_qs);
  suggestion_->setWordWrap(true);
  suggestion_->setTextFormat(Qt::PlainText);
  auto* scroll = new QScrollArea(this);  // the charts never set the wizard's minimum size
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(stats_);
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Split:"), this));
  top->addWidget(set_);
  top->addStretch(1);
  auto* column = new QVBoxLayout(this);
  column->addLayout(top);
  column->addWidget(suggestion_);
  column->addWidget(scroll, 1);
  connect(set_, &QComboBox::currentIndexChanged, this, &CheckPage::showSet);
}

void CheckPage::initializePage() {
  const auto imported = report_->data();
  {
    const QSignalBlocker block(set_);
    set_->clear();
    if (imported) {
      for (const auto& s : imported->stats.sets)
        set_->addItem(QString::fromStdString(s.name + " — " + s.file));
    }
  }
  if (!imported) return;
  QString text =
      tr("The spec's input canvas: %1×%2 (height × width), from the training images' median "
         "size.")
          .arg(imported->image_height)
          .arg(imported->image_width);
  const auto* train = imported->trainStats();
  if (train && imported->suggested_pair) {
    text += u' ' + tr("The default anchors reach the positive IoU on %1% of the training "
                      "boxes; the aspect pair (%2, %3) raises it to %4%, and the spec adds it "
                      "(unless it starts from COCO Mask R-CNN weights).")
                       .arg(100 * train->anchors.share_all, 0, 'f', 1)
                       .arg(imported->suggested_pair->first, 0, 'f', 2)
                       .arg(imported->suggested_pair->second, 0, 'f', 2)
                       .arg(100 * train->anchors.share_with_suggestion, 0, 'f', 1);
  } else if (train && train->anchors.share_all < 0.9) {
    // Low coverage that no aspect pair mends: said, so that the spec's defaults are a choice
    // made knowingly.
    text += u' ' + tr("The default anchors reach the positive IoU on %1% of the training boxes, "
                      "and no added aspect pair would raise it: the spec keeps them "
                      "(maskrcnn_config.anchor_scale sets their sizes).")
                       .arg(100 * train->anchors.share_all, 0, 'f', 1);
  } else if (train) {
    text += u' ' + tr("The default anchors reach the positive IoU on %1% of the training "
                      "boxes: the spec keeps them.")
                       .arg(100 * train->anchors.share_all, 0, 'f', 1);
  }
  suggestion_->setText(text);
  set_->setCurrentIndex(0);
  showSet(0);
}

void CheckPage::showSet(int index) {
  const auto imported = report_->data();
  if (!imported || index < 0 || index >= static_cast<int>(imported->stats.sets.size())) {
    stats_->showStats(nullptr, {}, {});
    return;
  }
  stats_->showStats(&imported->stats.sets[static_cast<size_t>(index)], imported->stats.problems,
                    tr("the default anchors on the %1×%2 canvas")
                        .arg(imported->image_height)
                        .arg(imported->image_width));
}

}  // namespace mrcnn::ui

#include "ui/common/layer_controls.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSlider>

namespace mrcnn::ui {

LayerControls::LayerControls(QWidget* parent) : QWidget(parent) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  masks_ = new QCheckBox(tr("&Masks"), this);
  boxes_ = new QCheckBox(tr("&Boxes"), this);
  labels_ = new QCheckBox(tr("&Labels"), this);
  crowd_ = new QCheckBox(tr("&Crowd"), this);
  crowd_->setToolTip(tr("Crowd regions (iscrowd = 1), drawn hatched with dashed boxes"));
  opacity_ = new QSlider(Qt::Horizontal, this);
  opacity_->setRange(0, 100);
  opacity_->setToolTip(tr("Mask opacity"));
  opacity_->setMaximumWidth(140);
  for (QCheckBox* box : {masks_, boxes_, labels_, crowd_}) {
    layout->addWidget(box);
    connect(box, &QCheckBox::toggled, this, [this] { emit layersChanged(layers()); });
  }
  layout->addSpacing(8);
  layout->addWidget(new QLabel(tr("Opacity"), this));
  layout->addWidget(opacity_);
  layout->addStretch(1);
  connect(opacity_, &QSlider::valueChanged, this, [this] { emit layersChanged(layers()); });
  setLayers(OverlayLayers{});
}

OverlayLayers LayerControls::layers() const {
  OverlayLayers l;
  l.masks = masks_->isChecked();
  l.boxes = boxes_->isChecked();
  l.labels = labels_->isChecked();
  l.crowd = crowd_->isChecked();
  l.mask_opacity = opacity_->value() / 100.0;
  return l;
}

void LayerControls::setLayers(const OverlayLayers& layers) {
  {
    const QSignalBlocker b1(masks_), b2(boxes_), b3(labels_), b4(crowd_), b5(opacity_);
    masks_->setChecked(layers.masks);
    boxes_->setChecked(layers.boxes);
    labels_->setChecked(layers.labels);
    crowd_->setChecked(layers.crowd);
    opacity_->setValue(static_cast<int>(layers.mask_opacity * 100 + 0.5));
  }
  emit layersChanged(this->layers());
}

}  // namespace mrcnn::ui

// The overlay layer toggles shared by the views: masks, boxes, labels, crowd regions, and the
// masks' opacity.
#pragma once

#include <QWidget>

#include "ui/common/overlay.h"

class QCheckBox;
class QSlider;

namespace mrcnn::ui {

class LayerControls : public QWidget {
  Q_OBJECT

 public:
  explicit LayerControls(QWidget* parent = nullptr);

  OverlayLayers layers() const;
  void setLayers(const OverlayLayers& layers);

  QCheckBox* masksBox() const { return masks_; }
  QCheckBox* boxesBox() const { return boxes_; }
  QCheckBox* labelsBox() const { return labels_; }
  QCheckBox* crowdBox() const { return crowd_; }
  QSlider* opacitySlider() const { return opacity_; }

 signals:
  void layersChanged(const mrcnn::ui::OverlayLayers& layers);

 private:
  QCheckBox* masks_;
  QCheckBox* boxes_;
  QCheckBox* labels_;
  QCheckBox* crowd_;
  QSlider* opacity_;
};

}  // namespace mrcnn::ui

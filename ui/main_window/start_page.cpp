#include "ui/main_window/start_page.h"

#include <QApplication>
#include <QCommandLinkButton>
#include <QFont>
#include <QFrame>
#include <QHBoxLayout>
#include <QIcon>
#include <QLabel>
#include <QVBoxLayout>

#include "ui/main_window/recent_panel.h"

namespace mrcnn::ui {
namespace {

QLabel* heading(const QString& text, QWidget* parent) {
  auto* label = new QLabel(text, parent);
  QFont font = label->font();
  font.setPointSizeF(font.pointSizeF() * 1.25);
  font.setBold(true);
  label->setFont(font);
  return label;
}

}  // namespace

StartPage::StartPage(RecentItems* recent, QWidget* parent)
    : QWidget(parent), recent_panel_(new RecentPanel(recent, this)) {
  setObjectName(u"startPage"_qs);
  struct Entry {
    Action action;
    QString name, text, description;
  };
  const Entry entries[] = {
      {Action::NewExperiment, u"newExperiment"_qs, tr("New Experiment from Data…"),
       tr("Import images labelled in LabelMe, VOC, CVAT, YOLO-seg or COCO, check them, choose "
          "pretrained weights, and get a spec ready to run.")},
      {Action::OpenExample, u"openExample"_qs, tr("Open the Embedded Example"),
       tr("Mask R-CNN ResNet-18 on the synthetic shapes data set, generated on first use: "
          "trains on a 2-core CPU in about 20 minutes.")},
      {Action::OpenSpec, u"openSpec"_qs, tr("Open Spec…"),
       tr("An experiment spec of ours or of TAO Toolkit's MaskRCNN.")},
      {Action::OpenRun, u"openRun"_qs, tr("Open Run…"),
       tr("A run directory: its losses, evaluations and checkpoints, followed while it "
          "trains.")},
  };

  auto* icon = new QLabel(this);
  icon->setPixmap(QApplication::windowIcon().pixmap(64, 64));
  auto* title = heading(QApplication::applicationDisplayName().isEmpty()
                            ? tr("Mask R-CNN Workbench")
                            : QApplication::applicationDisplayName(),
                        this);
  auto* tagline =
      new QLabel(tr("Instance segmentation: specs, training in a background engine, datasets, "
                    "predictions and their analysis."),
                 this);
  tagline->setWordWrap(true);
  auto* title_column = new QVBoxLayout;
  title_column->addWidget(title);
  title_column->addWidget(tagline);
  auto* top = new QHBoxLayout;
  top->addWidget(icon);
  top->addLayout(title_column, 1);

  auto* start_column = new QVBoxLayout;
  start_column->addWidget(heading(tr("Start"), this));
  for (const Entry& e : entries) {
    auto* b = new QCommandLinkButton(e.text, e.description, this);
    b->setObjectName(e.name);
    connect(b, &QCommandLinkButton::clicked, this,
            [this, action = e.action] { emit actionRequested(action); });
    buttons_[static_cast<int>(e.action)] = b;
    start_column->addWidget(b);
  }
  start_column->addStretch(1);

  auto* recent_column = new QVBoxLayout;
  recent_column->addWidget(heading(tr("Recent"), this));
  recent_panel_->setFrameShape(QFrame::NoFrame);
  recent_column->addWidget(recent_panel_, 1);
  connect(recent_panel_, &RecentPanel::openRequested, this, &StartPage::recentRequested);

  auto* columns = new QHBoxLayout;
  columns->setSpacing(32);
  columns->addLayout(start_column, 3);
  columns->addLayout(recent_column, 2);

  // The content keeps a readable width in the middle of a large window.
  auto* content = new QWidget(this);
  content->setMaximumWidth(1000);
  auto* content_column = new QVBoxLayout(content);
  content_column->addLayout(top);
  content_column->addSpacing(16);
  content_column->addLayout(columns, 1);
  auto* centre = new QHBoxLayout(this);
  centre->setContentsMargins(24, 24, 24, 24);
  centre->addStretch(1);
  centre->addWidget(content, 6);
  centre->addStretch(1);
}

QCommandLinkButton* StartPage::button(Action action) const {
  return buttons_[static_cast<int>(action)];
}

}  // namespace mrcnn::ui

// The Runs view's widgets and how they are laid out and connected; what they do is in
// runs_view.cpp.
#include <QCheckBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSlider>
#include <QSplitter>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "ui/run_monitor/run_plot.h"
#include "ui/run_monitor/runs_view.h"

namespace mrcnn::ui {
namespace {

// A loss: training's per logged step (solid), validation's per evaluation (dashed, dots).
PlotSpec lossPlot(const QString& title, const QString& name) {
  PlotSpec p{title + QStringLiteral(" (validation dashed)"),
             {"loss_" + name, "val_loss_" + name},
             /*smoothable=*/true,
             /*loggable=*/true};
  p.second_per_evaluation = true;
  p.labels = {QStringLiteral("training"), QStringLiteral("validation")};
  return p;
}

const QVector<PlotSpec>& plotSpecs() {
  static const QVector<PlotSpec> specs = {
      lossPlot("Total loss", "total"),
      lossPlot("RPN objectness loss", "rpn_objectness"),
      lossPlot("RPN box loss", "rpn_box"),
      lossPlot("Fast R-CNN class loss", "fast_rcnn_class"),
      lossPlot("Fast R-CNN box loss", "fast_rcnn_box"),
      lossPlot("Mask loss", "mask"),
      {"bbox mAP (AP solid, AP50 dashed)", {"bbox_AP", "bbox_AP50"}, false, false, true},
      {"segm mAP (AP solid, AP50 dashed)", {"segm_AP", "segm_AP50"}, false, false, true},
      {"Learning rate", {"lr"}, false, true},
      {"Images/s", {"images_per_second"}, true, false},
      {"Data wait share", {"data_wait_share"}, true, false},
      {"Memory MiB (engine solid, device dashed)",
       {"memory_rss_mib", "memory_device_mib"},
       false,
       false},
  };
  return specs;
}

}  // namespace

void RunsView::buildUi() {
  auto* root = new QHBoxLayout(this);
  root->setContentsMargins(0, 0, 0, 0);
  auto* splitter = new QSplitter(Qt::Horizontal, this);
  root->addWidget(splitter);

  // Left: the run list and what acts on it.
  auto* left = new QWidget(splitter);
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(4, 4, 4, 4);
  list_ = new QTreeWidget(left);
  list_->setColumnCount(kColumns);
  list_->setHeaderLabels({tr("Run"), tr("Task"), tr("Status"), tr("Step")});
  list_->setRootIsDecorated(false);
  list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  list_->setToolTip(tr("Select several runs (Ctrl or Shift) to overlay their curves"));
  list_->header()->setSectionResizeMode(kName, QHeaderView::Stretch);
  // Runs of one spec share a prefix; what tells them apart is at the end.
  list_->setTextElideMode(Qt::ElideMiddle);
  for (int c = kTask; c < kColumns; ++c)
    list_->header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  connect(list_, &QTreeWidget::itemSelectionChanged, this, &RunsView::onSelectionChanged);
  left_layout->addWidget(list_);
  auto* buttons = new QHBoxLayout;
  auto* open = new QPushButton(tr("Open run…"), left);
  open->setToolTip(tr("Reopen a run directory from its events.jsonl"));
  connect(open, &QPushButton::clicked, this, &RunsView::browseForRun);
  stop_ = new QPushButton(tr("Stop"), left);
  stop_->setToolTip(
      tr("Ask the engine to finish its step, write a checkpoint and stop; "
         "press again to kill it"));
  connect(stop_, &QPushButton::clicked, this, &RunsView::stopCurrent);
  resume_ = new QPushButton(tr("Resume"), left);
  resume_->setToolTip(tr("Train again on this run directory from its last checkpoint"));
  connect(resume_, &QPushButton::clicked, this, &RunsView::resumeCurrent);
  prune_ = new QPushButton(tr("Prune…"), left);
  prune_->setToolTip(
      tr("Prune this run's model with TAO's rules into a new folder, then retrain it"));
  connect(prune_, &QPushButton::clicked, this, [this] {
    if (current_ >= 0) emit pruneRequested(runDir(current_));
  });
  export_ = new QPushButton(tr("Export…"), left);
  export_->setToolTip(tr("Export this run's model to ONNX, fp32 or calibrated int8, checked "
                         "against the engine's own inference"));
  connect(export_, &QPushButton::clicked, this, [this] {
    if (current_ >= 0) emit exportRequested(runDir(current_));
  });
  bring_back_ = new QPushButton(tr("Bring Back"), left);
  bring_back_->setToolTip(tr("Copy this run's folder from its host as it is now (what changed "
                             "only) into its run directory"));
  connect(bring_back_, &QPushButton::clicked, this, &RunsView::bringBackCurrent);
  bring_back_->hide();  // shown for a run sent to a host
  buttons->addWidget(open);
  buttons->addStretch();
  buttons->addWidget(bring_back_);
  buttons->addWidget(stop_);
  buttons->addWidget(resume_);
  left_layout->addLayout(buttons);
  // What makes something of the run's model, on a row of its own (the left pane stays narrow).
  auto* model_buttons = new QHBoxLayout;
  model_buttons->addStretch();
  model_buttons->addWidget(prune_);
  model_buttons->addWidget(export_);
  left_layout->addLayout(model_buttons);

  // Right: controls, status, progress, the plots, the log.
  auto* right_split = new QSplitter(Qt::Vertical, splitter);
  auto* top = new QWidget(right_split);
  auto* top_layout = new QVBoxLayout(top);
  top_layout->setContentsMargins(4, 4, 4, 0);
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Smoothing"), top));
  smoothing_slider_ = new QSlider(Qt::Horizontal, top);
  smoothing_slider_->setRange(0, 99);
  smoothing_slider_->setValue(static_cast<int>(std::lround(smoothing_ * 100)));
  smoothing_slider_->setMaximumWidth(160);
  smoothing_slider_->setToolTip(
      tr("Exponential moving average of the noisy per-step curves; "
         "the raw curve stays faint behind"));
  smoothing_label_ = new QLabel(top);
  smoothing_label_->setMinimumWidth(QFontMetrics(font()).horizontalAdvance("0.00") + 4);
  connect(smoothing_slider_, &QSlider::valueChanged, this,
          [this](int v) { setSmoothing(v / 100.0); });
  controls->addWidget(smoothing_slider_);
  controls->addWidget(smoothing_label_);
  log_scale_ = new QCheckBox(tr("Log scale"), top);
  log_scale_->setToolTip(tr("Logarithmic y axis for the losses and the learning rate"));
  connect(log_scale_, &QCheckBox::toggled, this, &RunsView::setLogScale);
  controls->addWidget(log_scale_);
  auto* reset = new QPushButton(tr("Fit"), top);
  reset->setToolTip(
      tr("Fit every plot to its data again (or double-click a plot); "
         "drag to pan, wheel to zoom"));
  connect(reset, &QPushButton::clicked, this, [this] {
    for (RunPlot* p : plots_)
      p->resetView();
  });
  controls->addWidget(reset);
  controls->addStretch();
  auto* png = new QPushButton(tr("Export PNG…"), top);
  connect(png, &QPushButton::clicked, this, &RunsView::exportPngInteractive);
  auto* csv = new QPushButton(tr("Export CSV…"), top);
  connect(csv, &QPushButton::clicked, this, &RunsView::exportCsvInteractive);
  controls->addWidget(png);
  controls->addWidget(csv);
  top_layout->addLayout(controls);

  legend_ = new QLabel(top);
  legend_->setWordWrap(true);
  legend_->setTextFormat(Qt::RichText);
  top_layout->addWidget(legend_);
  status_ = new QLabel(top);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  top_layout->addWidget(status_);
  details_ = new QLabel(top);
  details_->setWordWrap(true);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  top_layout->addWidget(details_);
  progress_ = new QProgressBar(top);
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  progress_->setTextVisible(true);
  top_layout->addWidget(progress_);

  auto* scroll = new QScrollArea(top);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  plot_area_ = new QWidget(scroll);
  auto* grid = new QGridLayout(plot_area_);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setSpacing(4);
  constexpr int kColumnsOfPlots = 3;
  for (int i = 0; i < plotSpecs().size(); ++i) {
    auto* plot = new RunPlot(plotSpecs()[i], plot_area_);
    plots_.append(plot);
    grid->addWidget(plot, i / kColumnsOfPlots, i % kColumnsOfPlots);
  }
  scroll->setWidget(plot_area_);
  top_layout->addWidget(scroll, 1);

  log_ = new QPlainTextEdit(right_split);
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(20000);
  log_->setLineWrapMode(QPlainTextEdit::NoWrap);
  log_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  log_->setPlaceholderText(tr("The engine's log appears here"));

  right_split->setStretchFactor(0, 4);
  right_split->setStretchFactor(1, 1);
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 4);
  splitter->setSizes({360, 1000});
  setSmoothing(smoothing_);
  updateCurrentPanel(true);
}

}  // namespace mrcnn::ui

#include "ui/run_monitor/process_count_box.h"

#include <QDir>
#include <QHBoxLayout>
#include <QLabel>
#include <QProcessEnvironment>
#include <QSpinBox>
#include <QThread>
#include <algorithm>

#include "ui/run_monitor/runs_view.h"

namespace mrcnn::ui {
namespace {

// The GUI does not link LibTorch, so it asks NVIDIA's driver rather than CUDA.
int driverGpus() {
  return static_cast<int>(QDir(QStringLiteral("/proc/driver/nvidia/gpus"))
                              .entryList(QDir::Dirs | QDir::NoDotAndDotDot)
                              .size());
}

std::optional<QString> cudaVisibleDevices() {
  const QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  if (!env.contains(QStringLiteral("CUDA_VISIBLE_DEVICES"))) return std::nullopt;
  return env.value(QStringLiteral("CUDA_VISIBLE_DEVICES"));
}

}  // namespace

int ProcessCountBox::visibleGpus(int driverGpus, const std::optional<QString>& cudaVisibleDevices) {
  if (!cudaVisibleDevices) return driverGpus;
  int listed = 0;
  for (const QString& entry : cudaVisibleDevices->split(',')) {
    const QString id = entry.trimmed();
    if (id.isEmpty() || id.startsWith('-')) break;
    ++listed;
  }
  return std::min(listed, driverGpus);
}

int ProcessCountBox::processLimit() {
  const int gpus = visibleGpus(driverGpus(), cudaVisibleDevices());
  return std::max(1, gpus > 0 ? gpus : QThread::idealThreadCount());
}

ProcessCountBox::ProcessCountBox(RunsView* runs, QWidget* parent)
    : QWidget(parent), spin_(new QSpinBox(this)) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 0, 4, 0);
  auto* label = new QLabel(tr("Processes"), this);
  label->setBuddy(spin_);
  layout->addWidget(label);
  layout->addWidget(spin_);
  const bool gpus = visibleGpus(driverGpus(), cudaVisibleDevices()) > 0;
  spin_->setRange(1, processLimit());
  spin_->setValue(runs->trainProcesses());
  setToolTip((gpus ? tr("Engine processes of a training run, data-parallel: one a GPU, up to "
                        "the %1 GPU(s) found.")
                   : tr("Engine processes of a training run, data-parallel: up to one a CPU "
                        "core (%1; no GPU found)."))
                 .arg(spin_->maximum()) +
             tr(" Other tasks run one process; Resume keeps the run's number."));
  connect(spin_, &QSpinBox::valueChanged, runs, &RunsView::setTrainProcesses);
  connect(runs, &RunsView::trainProcessesChanged, this, [this, runs](int count) {
    spin_->setValue(count);
    // Above this machine's limit: the box's clamped value is what runs.
    if (spin_->value() != count) runs->setTrainProcesses(spin_->value());
  });
  if (spin_->value() != runs->trainProcesses()) runs->setTrainProcesses(spin_->value());
}

}  // namespace mrcnn::ui

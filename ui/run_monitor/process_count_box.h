// "Processes": how many engine processes a training run started from the GUI uses — the
// ranks of a data-parallel run on this machine, one a GPU (or one a CPU core where there is
// no GPU). It shows and sets a RunsView's trainProcesses(); the view applies it to `train`
// only, and a resumed run keeps the number it ran with.
#pragma once

#include <QString>
#include <QWidget>
#include <optional>

class QSpinBox;

namespace mrcnn::ui {

class RunsView;

class ProcessCountBox : public QWidget {
  Q_OBJECT

 public:
  // `runs` is not owned and must outlive the box.
  explicit ProcessCountBox(RunsView* runs, QWidget* parent = nullptr);

  QSpinBox* spinBox() const { return spin_; }

  // The most processes offered here: the GPUs the engine can see, else the CPU cores.
  static int processLimit();
  // Of `driverGpus` GPUs, those CUDA_VISIBLE_DEVICES lets through (all when it is unset):
  // its entries up to the first empty or negative one, as CUDA reads it.
  static int visibleGpus(int driverGpus, const std::optional<QString>& cudaVisibleDevices);

 private:
  QSpinBox* spin_;
};

}  // namespace mrcnn::ui

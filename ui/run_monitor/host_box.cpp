#include "ui/run_monitor/host_box.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>

#include "remote/hosts.h"
#include "ui/run_monitor/runs_view.h"

namespace mrcnn::ui {
namespace {

constexpr int kEditRole = Qt::UserRole + 1;

}  // namespace

HostBox::HostBox(RunsView* runs, QWidget* parent)
    : QWidget(parent), runs_(runs), combo_(new QComboBox(this)) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 0, 4, 0);
  auto* label = new QLabel(tr("Run on"), this);
  label->setBuddy(combo_);
  layout->addWidget(label);
  layout->addWidget(combo_);
  // As wide as a short name: the toolbar must not widen the window (long names elide).
  combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  combo_->setMinimumContentsLength(8);
  setToolTip(tr("Where a training run goes: this machine, or a host of %1 (the spec goes there, "
                "the engine runs detached, its events are followed here and the run comes back "
                "at the end).")
                 .arg(QString::fromStdString(remote::defaultHostsPath().string())));
  reload();
  connect(combo_, &QComboBox::activated, this, [this](int index) {
    if (combo_->itemData(index, kEditRole).toBool()) {
      reload();  // back to the chosen host until the dialog says otherwise
      emit editRequested();
      return;
    }
    runs_->setTrainHost(combo_->itemData(index).toString());
  });
  connect(runs, &RunsView::trainHostChanged, this, [this](const QString&) { reload(); });
}

void HostBox::reload() {
  const QSignalBlocker block(combo_);
  combo_->clear();
  combo_->addItem(tr("This machine"), QString());
  QString problem;
  try {
    for (const remote::Host& h : remote::loadHosts(remote::defaultHostsPath()).hosts) {
      const QString name = QString::fromStdString(h.name);
      combo_->addItem(tr("%1 (%2)").arg(name, QString::fromStdString(h.destination)), name);
    }
  } catch (const remote::HostsError& e) {
    problem = QString::fromUtf8(e.what());
  }
  combo_->insertSeparator(combo_->count());
  combo_->addItem(tr("Edit Hosts…"));
  combo_->setItemData(combo_->count() - 1, true, kEditRole);
  const int chosen = combo_->findData(runs_->trainHost());
  if (chosen < 0 && !runs_->trainHost().isEmpty()) {
    runs_->setTrainHost(QString());  // gone from the file: this machine again
    return;
  }
  combo_->setCurrentIndex(std::max(0, chosen));
  combo_->setItemData(0, problem.isEmpty() ? QVariant() : QVariant(problem), Qt::ToolTipRole);
}

}  // namespace mrcnn::ui

// "Run on": where a training run started from the GUI goes: this machine, or a host of the
// hosts file (remote/hosts.h). It shows and sets a RunsView's trainHost(); its last entry,
// "Edit Hosts…", asks for the hosts dialog (editRequested), after which reload() reads the
// file again.
#pragma once

#include <QString>
#include <QWidget>

class QComboBox;

namespace mrcnn::ui {

class RunsView;

class HostBox : public QWidget {
  Q_OBJECT

 public:
  // `runs` is not owned and must outlive the box.
  explicit HostBox(RunsView* runs, QWidget* parent = nullptr);

  QComboBox* comboBox() const { return combo_; }
  // Reads the hosts file again; the chosen host stays chosen while it is there.
  void reload();

 signals:
  void editRequested();

 private:
  RunsView* runs_;
  QComboBox* combo_;
};

}  // namespace mrcnn::ui

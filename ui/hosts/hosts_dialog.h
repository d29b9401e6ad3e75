// Hosts: the hosts file (remote/hosts.h) edited in a dialog. A list of hosts on the left, the
// chosen one's fields on the right (a slurm host's batch options too); Check Connection runs `ssh HOST ENGINE --version` with the
// host's settings and shows what came back; Save writes the file whole once every host reads
// back, else names the host and field that does not (nothing written).
#pragma once

#include <QDialog>
#include <QProcess>
#include <filesystem>
#include <vector>

#include "remote/hosts.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;

namespace mrcnn::ui {

class HostsDialog : public QDialog {
  Q_OBJECT

 public:
  // `path`: the hosts file (remote::defaultHostsPath() in the application).
  explicit HostsDialog(const std::filesystem::path& path, QWidget* parent = nullptr);

  // The hosts as edited (the form's fields taken into the current host first).
  std::vector<remote::Host> hosts();
  // Writes the file; false with the reason shown (and in `error`) when a host is not valid.
  bool save(QString* error = nullptr);
  // The form of the current host, for tests.
  QLineEdit* nameEdit() const { return name_; }
  QLineEdit* destinationEdit() const { return destination_; }
  QLineEdit* engineEdit() const { return engine_; }
  QLineEdit* workDirEdit() const { return work_dir_; }
  QSpinBox* portBox() const { return port_; }
  QComboBox* kindBox() const { return kind_; }
  QLineEdit* partitionEdit() const { return partition_; }
  QSpinBox* gpusBox() const { return gpus_; }
  QWidget* slurmBox() const { return slurm_box_; }
  QLabel* statusLabel() const { return status_; }
  QListWidget* list() const { return list_; }
  // Adds a host named host<N>, its other fields empty, and selects it.
  void addHost();
  void removeCurrent();
  // Starts the connection check of the current host; the answer lands in statusLabel().
  void checkConnection();

 signals:
  void connectionChecked(bool ok, const QString& text);

 private:
  void showHost(int row);
  void takeForm();  // the form's fields into hosts_[current_]

  std::filesystem::path path_;
  std::vector<remote::Host> hosts_;
  int current_ = -1;
  QListWidget* list_;
  QLineEdit* name_;
  QComboBox* kind_;
  QLineEdit* destination_;
  QSpinBox* port_;
  QLineEdit* identity_;
  QPlainTextEdit* ssh_options_;
  QLineEdit* engine_;
  QLineEdit* work_dir_;
  QSpinBox* nproc_;
  // The SLURM options, enabled for a slurm host.
  QWidget* slurm_box_;
  QLineEdit* partition_;
  QSpinBox* nodes_;
  QSpinBox* gpus_;
  QLineEdit* time_;
  QLineEdit* account_;
  QPlainTextEdit* extra_;
  QLineEdit* commands_dir_;
  QLabel* status_;
  QPushButton* check_;
  QProcess check_process_;
};

}  // namespace mrcnn::ui

#include "ui/hosts/hosts_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "remote/ssh_command.h"

namespace mrcnn::ui {
namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }
std::string s(const QString& q) { return q.trimmed().toStdString(); }

}  // namespace

HostsDialog::HostsDialog(const std::filesystem::path& path, QWidget* parent)
    : QDialog(parent),
      path_(path),
      list_(new QListWidget(this)),
      name_(new QLineEdit(this)),
      kind_(new QComboBox(this)),
      destination_(new QLineEdit(this)),
      port_(new QSpinBox(this)),
      identity_(new QLineEdit(this)),
      ssh_options_(new QPlainTextEdit(this)),
      engine_(new QLineEdit(this)),
      work_dir_(new QLineEdit(this)),
      nproc_(new QSpinBox(this)),
      slurm_box_(new QGroupBox(tr("SLURM"), this)),
      partition_(new QLineEdit(slurm_box_)),
      nodes_(new QSpinBox(slurm_box_)),
      gpus_(new QSpinBox(slurm_box_)),
      time_(new QLineEdit(slurm_box_)),
      account_(new QLineEdit(slurm_box_)),
      extra_(new QPlainTextEdit(slurm_box_)),
      commands_dir_(new QLineEdit(slurm_box_)),
      status_(new QLabel(this)),
      check_(new QPushButton(tr("Check Connection"), this)) {
  setWindowTitle(tr("Hosts"));
  kind_->addItems({QStringLiteral("ssh"), QStringLiteral("slurm")});
  port_->setRange(0, 65535);
  port_->setSpecialValueText(tr("ssh's own"));
  nproc_->setRange(1, 1024);
  destination_->setPlaceholderText(tr("user@host, or a Host of ~/.ssh/config"));
  identity_->setPlaceholderText(tr("ssh's own keys and agent"));
  ssh_options_->setPlaceholderText(tr("one argument a line, e.g.\n-o\nProxyJump=gateway"));
  engine_->setPlaceholderText(tr("/path/on/the/host/mrcnn-engine"));
  work_dir_->setPlaceholderText(tr("/folder/on/the/host for specs and runs"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* form = new QFormLayout;
  form->addRow(tr("&Name"), name_);
  form->addRow(tr("&Kind"), kind_);
  form->addRow(tr("&Destination"), destination_);
  form->addRow(tr("&Port"), port_);
  form->addRow(tr("&Identity file"), identity_);
  form->addRow(tr("SSH &options"), ssh_options_);
  form->addRow(tr("&Engine"), engine_);
  form->addRow(tr("&Work folder"), work_dir_);
  form->addRow(tr("Pro&cesses"), nproc_);
  nodes_->setRange(1, 100000);
  gpus_->setRange(0, 1024);
  gpus_->setSpecialValueText(tr("none (CPU tasks)"));
  time_->setPlaceholderText(tr("e.g. 12:00:00"));
  extra_->setPlaceholderText(tr("more lines for the batch script, e.g.\n#SBATCH --qos=normal"));
  commands_dir_->setPlaceholderText(tr("where sbatch, squeue, scancel, srun are (default: PATH)"));
  auto* slurm_form = new QFormLayout(slurm_box_);
  slurm_form->addRow(tr("Partition"), partition_);
  slurm_form->addRow(tr("Nodes"), nodes_);
  slurm_form->addRow(tr("GPUs a node"), gpus_);
  slurm_form->addRow(tr("Time limit"), time_);
  slurm_form->addRow(tr("Account"), account_);
  slurm_form->addRow(tr("Script lines"), extra_);
  slurm_form->addRow(tr("Commands folder"), commands_dir_);
  connect(kind_, &QComboBox::currentTextChanged, this,
          [this](const QString& kind) { slurm_box_->setVisible(kind == QLatin1String("slurm")); });
  auto* add = new QPushButton(tr("&Add"), this);
  auto* remove = new QPushButton(tr("&Remove"), this);
  auto* list_buttons = new QHBoxLayout;
  list_buttons->addWidget(add);
  list_buttons->addWidget(remove);
  auto* left = new QVBoxLayout;
  left->addWidget(list_);
  left->addLayout(list_buttons);
  auto* right = new QVBoxLayout;
  right->addLayout(form);
  right->addWidget(slurm_box_);
  right->addWidget(check_);
  auto* columns = new QHBoxLayout;
  columns->addLayout(left, 1);
  columns->addLayout(right, 2);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel, this);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(new QLabel(tr("Hosts in %1. No password is kept: ssh's keys, agent and "
                                  "config do the authenticating.")
                                   .arg(QString::fromStdString(path_.string())),
                               this));
  layout->addLayout(columns);
  layout->addWidget(status_);
  layout->addWidget(buttons);

  try {
    hosts_ = remote::loadHosts(path_).hosts;
  } catch (const remote::HostsError& e) {
    status_->setText(tr("The file does not read: %1. Saving replaces it.").arg(QString::fromUtf8(e.what())));
  }
  for (const remote::Host& h : hosts_) list_->addItem(q(h.name));
  connect(list_, &QListWidget::currentRowChanged, this, &HostsDialog::showHost);
  connect(name_, &QLineEdit::textEdited, this, [this](const QString& text) {
    if (QListWidgetItem* item = list_->item(current_)) item->setText(text);
  });
  connect(add, &QPushButton::clicked, this, &HostsDialog::addHost);
  connect(remove, &QPushButton::clicked, this, &HostsDialog::removeCurrent);
  connect(check_, &QPushButton::clicked, this, &HostsDialog::checkConnection);
  connect(buttons, &QDialogButtonBox::accepted, this, [this] {
    if (save()) accept();
  });
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(&check_process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus) {
    const QString out = QString::fromUtf8(check_process_.readAllStandardOutput()).trimmed();
    const QString err = QString::fromUtf8(check_process_.readAllStandardError()).trimmed();
    const bool ok = code == 0;
    status_->setText(ok ? tr("Connected: %1").arg(out.section('\n', 0, 0))
                        : tr("No connection (exit code %1): %2").arg(code).arg(err.isEmpty() ? out : err));
    check_->setEnabled(true);
    emit connectionChecked(ok, status_->text());
  });
  connect(&check_process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error != QProcess::FailedToStart) return;
    status_->setText(tr("ssh cannot start: %1").arg(check_process_.errorString()));
    check_->setEnabled(true);
    emit connectionChecked(false, status_->text());
  });
  if (!hosts_.empty()) list_->setCurrentRow(0);
  showHost(list_->currentRow());
}

void HostsDialog::showHost(int row) {
  takeForm();
  current_ = row;
  const bool any = row >= 0 && row < static_cast<int>(hosts_.size());
  for (QWidget* w : std::initializer_list<QWidget*>{name_, kind_, destination_, port_, identity_, ssh_options_,
                                                    engine_, work_dir_, nproc_, slurm_box_, check_})
    w->setEnabled(any);
  if (!any) return;
  const remote::Host& h = hosts_[static_cast<size_t>(row)];
  name_->setText(q(h.name));
  kind_->setCurrentText(q(h.kind));
  destination_->setText(q(h.destination));
  port_->setValue(h.port);
  identity_->setText(q(h.identity_file));
  QStringList options;
  for (const std::string& o : h.ssh_options) options << q(o);
  ssh_options_->setPlainText(options.join('\n'));
  engine_->setText(q(h.engine));
  work_dir_->setText(q(h.work_dir));
  nproc_->setValue(h.nproc_per_node);
  const remote::SlurmOptions& o = h.slurm;
  partition_->setText(q(o.partition));
  nodes_->setValue(o.nodes);
  gpus_->setValue(o.gpus_per_node);
  time_->setText(q(o.time));
  account_->setText(q(o.account));
  QStringList extra;
  for (const std::string& line : o.extra) extra << q(line);
  extra_->setPlainText(extra.join('\n'));
  commands_dir_->setText(q(o.commands_dir));
  slurm_box_->setVisible(h.kind == "slurm");
}

void HostsDialog::takeForm() {
  if (current_ < 0 || current_ >= static_cast<int>(hosts_.size())) return;
  remote::Host& h = hosts_[static_cast<size_t>(current_)];
  h.name = s(name_->text());
  h.kind = s(kind_->currentText());
  h.destination = s(destination_->text());
  h.port = port_->value();
  h.identity_file = s(identity_->text());
  h.ssh_options.clear();
  for (const QString& line : ssh_options_->toPlainText().split('\n', Qt::SkipEmptyParts))
    if (!line.trimmed().isEmpty()) h.ssh_options.push_back(s(line));
  h.engine = s(engine_->text());
  h.work_dir = s(work_dir_->text());
  h.nproc_per_node = nproc_->value();
  remote::SlurmOptions& o = h.slurm;
  o.partition = s(partition_->text());
  o.nodes = nodes_->value();
  o.gpus_per_node = gpus_->value();
  o.time = s(time_->text());
  o.account = s(account_->text());
  o.extra.clear();
  for (const QString& line : extra_->toPlainText().split('\n', Qt::SkipEmptyParts))
    if (!line.trimmed().isEmpty()) o.extra.push_back(s(line));
  o.commands_dir = s(commands_dir_->text());
}

std::vector<remote::Host> HostsDialog::hosts() {
  takeForm();
  return hosts_;
}

void HostsDialog::addHost() {
  takeForm();
  remote::Host h;
  h.name = "host" + std::to_string(hosts_.size() + 1);
  hosts_.push_back(h);
  list_->addItem(q(h.name));
  list_->setCurrentRow(static_cast<int>(hosts_.size()) - 1);
  name_->setFocus();
  name_->selectAll();
}

void HostsDialog::removeCurrent() {
  const int row = list_->currentRow();
  if (row < 0) return;
  current_ = -1;  // the form belongs to the host going away
  hosts_.erase(hosts_.begin() + row);
  delete list_->takeItem(row);
  showHost(list_->currentRow());
}

bool HostsDialog::save(QString* error) {
  remote::HostsFile file;
  file.hosts = hosts();
  try {
    remote::saveHosts(path_, file);
  } catch (const std::exception& e) {
    status_->setText(tr("Not saved: %1").arg(QString::fromUtf8(e.what())));
    if (error) *error = status_->text();
    return false;
  }
  status_->setText(tr("Saved %1.").arg(QString::fromStdString(path_.string())));
  return true;
}

void HostsDialog::checkConnection() {
  takeForm();
  if (current_ < 0 || check_process_.state() != QProcess::NotRunning) return;
  const remote::Host& h = hosts_[static_cast<size_t>(current_)];
  if (h.destination.empty() || h.engine.empty()) {
    status_->setText(tr("Give the destination and the engine's path first."));
    emit connectionChecked(false, status_->text());
    return;
  }
  const std::vector<std::string> argv = remote::sshArgv(h, {h.engine, "--version"});
  QStringList args;
  for (size_t i = 1; i < argv.size(); ++i) args << q(argv[i]);
  status_->setText(tr("Connecting to %1…").arg(q(h.destination)));
  check_->setEnabled(false);
  check_process_.start(q(argv[0]), args);
}

}  // namespace mrcnn::ui

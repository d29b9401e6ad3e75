// The hosts dialog (ui/hosts): a host added and filled in is saved and reads back; a host
// that would not read back (a missing engine, a relative work folder) is refused by name and
// nothing is written; Check Connection runs the real ssh and shows why it could not connect.
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include "remote/hosts.h"
#include "ui/hosts/hosts_dialog.h"

using mrcnn::ui::HostsDialog;

class HostsDialogTest : public QObject {
  Q_OBJECT

 private slots:
  void addSaveAndReadBack() {
    QTemporaryDir dir;
    const std::filesystem::path file = dir.filePath("config/mrcnn-workbench/hosts.json").toStdString();
    HostsDialog dialog(file);
    QCOMPARE(dialog.list()->count(), 0);
    dialog.addHost();
    QCOMPARE(dialog.list()->count(), 1);
    dialog.nameEdit()->setText("gpu1");
    dialog.destinationEdit()->setText("me@gpu1.lab");
    dialog.portBox()->setValue(2222);
    dialog.workDirEdit()->setText("/scratch/me");

    // No engine yet: refused, naming the field; nothing written.
    QString error;
    QVERIFY(!dialog.save(&error));
    QVERIFY2(error.contains("hosts[0].engine: missing"), qPrintable(error));
    QVERIFY(!std::filesystem::exists(file));

    dialog.engineEdit()->setText("scratch/mrcnn-engine");
    QVERIFY(!dialog.save(&error));
    QVERIFY2(error.contains("hosts[0].engine: an absolute path"), qPrintable(error));
    QVERIFY(dialog.statusLabel()->text().contains("Not saved"));

    dialog.engineEdit()->setText("/opt/mrcnn/bin/mrcnn-engine");
    QVERIFY2(dialog.save(&error), qPrintable(error));
    const mrcnn::remote::HostsFile saved = mrcnn::remote::loadHosts(file);
    QCOMPARE(saved.hosts.size(), size_t{1});
    const mrcnn::remote::Host& h = saved.hosts[0];
    QCOMPARE(h.name, std::string("gpu1"));
    QCOMPARE(h.destination, std::string("me@gpu1.lab"));
    QCOMPARE(h.port, 2222);
    QCOMPARE(h.engine, std::string("/opt/mrcnn/bin/mrcnn-engine"));

    // A slurm host's batch options are shown for it alone and saved with it.
    QVERIFY(dialog.slurmBox()->isHidden());
    dialog.kindBox()->setCurrentText("slurm");
    QVERIFY(!dialog.slurmBox()->isHidden());
    dialog.partitionEdit()->setText("gpu");
    dialog.gpusBox()->setValue(4);
    QVERIFY2(dialog.save(&error), qPrintable(error));
    QCOMPARE(mrcnn::remote::loadHosts(file).hosts[0].slurm.partition, std::string("gpu"));
    QCOMPARE(mrcnn::remote::loadHosts(file).hosts[0].slurm.gpus_per_node, 4);

    // A second dialog shows what is in the file; removing the host saves an empty list.
    HostsDialog again(file);
    QCOMPARE(again.list()->count(), 1);
    QCOMPARE(again.nameEdit()->text(), QString("gpu1"));
    QCOMPARE(again.portBox()->value(), 2222);
    again.removeCurrent();
    QVERIFY(again.save());
    QVERIFY(mrcnn::remote::loadHosts(file).hosts.empty());
  }

  // The real ssh against a port where nothing listens: the dialog says why it did not connect.
  void checkConnectionShowsWhyNot() {
    QTemporaryDir dir;
    HostsDialog dialog(dir.filePath("hosts.json").toStdString());
    dialog.addHost();
    dialog.destinationEdit()->setText("nobody@127.0.0.1");
    dialog.portBox()->setValue(1);
    dialog.engineEdit()->setText("/opt/mrcnn/bin/mrcnn-engine");
    dialog.workDirEdit()->setText("/tmp");
    QSignalSpy checked(&dialog, &HostsDialog::connectionChecked);
    dialog.checkConnection();
    QVERIFY(checked.wait(30000));
    QCOMPARE(checked.at(0).at(0).toBool(), false);
    const QString text = checked.at(0).at(1).toString();
    QVERIFY2(text.contains("No connection") || text.contains("ssh cannot start"), qPrintable(text));
    QVERIFY2(text.contains("refused") || text.contains("cannot start"), qPrintable(text));
  }
};

QTEST_MAIN(HostsDialogTest)
#include "test_hosts_dialog.moc"
